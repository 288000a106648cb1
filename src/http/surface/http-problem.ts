import { DomainError, type ErrorCode } from '../../errors/codes';

/** A refusal that carries response headers of its own (Retry-After on a 429 or a 503). */
export class HttpProblem extends DomainError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(code, message);
  }
}
