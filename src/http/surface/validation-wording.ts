import type { ErrorCode } from '../../errors/codes';

/** One schema violation as Fastify's validator reports it. */
export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  parentSchema?: { description?: string };
}

/**
 * Fields (`context:name`) whose absence has its own code. The schema marks them required (so the published
 * document and generated clients say so), and a request without one gets the code integrators
 * handle for it rather than a generic validation failure.
 */
const MISSING_FIELD_CODES: Partial<Record<string, { code: ErrorCode; message: string }>> = {
  'body:idempotency_key': {
    code: 'IDEMPOTENCY_KEY_MISSING',
    message: 'field "idempotency_key" is required: reserve is a monetary write',
  },
  'headers:idempotency-key': {
    code: 'IDEMPOTENCY_KEY_MISSING',
    message: 'the Idempotency-Key header is required on this POST',
  },
};

/** "one of a, b": the literals a union at the issue's path allows, when its schema gives no description. */
function allowedLiterals(issues: ValidationIssue[], issue: ValidationIssue): string | null {
  if (issue.keyword !== 'anyOf' && issue.keyword !== 'const') return null;
  const values = issues
    .filter((other) => other.keyword === 'const' && other.instancePath === issue.instancePath)
    .map((other) => String(other.params.allowedValue));
  return values.length > 0 ? `one of ${values.join(', ')}` : null;
}

/** Turns the first schema violation into a sentence that names the field and what it must be. */
export function describeValidation(issues: ValidationIssue[], context: string): { code: ErrorCode; message: string } {
  // A value outside a union of literals fails each literal ("must be equal to constant") before the
  // union itself: the union's issue is the one whose schema says what the field may be.
  const issue =
    issues.find((candidate) => candidate.keyword === 'additionalProperties') ??
    issues.find((candidate) => candidate.keyword === 'required') ??
    issues.find((candidate) => candidate.keyword === 'anyOf' && candidate.instancePath === issues[0]!.instancePath) ??
    issues[0]!;
  const path = issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const where = context === 'body' ? '' : `${context} `;
  if (issue.keyword === 'additionalProperties') {
    const extra = String(issue.params.additionalProperty);
    const field = path ? `${path}.${extra}` : extra;
    return { code: 'UNKNOWN_FIELD', message: `unknown ${where}field "${field}": this endpoint does not accept it` };
  }
  if (issue.keyword === 'required') {
    const missing = String(issue.params.missingProperty);
    const field = path ? `${path}.${missing}` : missing;
    const special = path ? undefined : MISSING_FIELD_CODES[`${context}:${missing}`];
    if (special) return special;
    return { code: 'VALIDATION_FAILED', message: `${where}field "${field}" is required` };
  }
  const field = path || (context === 'body' ? 'body' : context);
  const rule = issue.parentSchema?.description ?? allowedLiterals(issues, issue) ?? issue.message ?? 'is invalid';
  if (issue.keyword === 'type' && !path && context === 'body') {
    return { code: 'VALIDATION_FAILED', message: 'the body must be a JSON object' };
  }
  return {
    code: 'VALIDATION_FAILED',
    message: `${where}field "${field}" ${rule.startsWith('must') ? rule : `must be ${rule}`}`,
  };
}
