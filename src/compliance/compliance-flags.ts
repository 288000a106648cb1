import type { Database } from '../store/database';
import type { ComplianceFlag, ComplianceService, FlagFilter, SessionUse } from './compliance-service';

/**
 * What the surfaces ask of compliance (the flag list on both APIs, the dashboard and the CLI; the
 * player page's session sightings), bound to the store so that no surface handles it.
 */
export class ComplianceFlags {
  constructor(
    private readonly db: Database,
    private readonly rules: ComplianceService,
  ) {}

  /** Newest first; every operator's when `scope` is null (the CLI). */
  list(scope: string | null, filter: FlagFilter = {}): Promise<ComplianceFlag[]> {
    return this.rules.listFlags(scope, filter, this.db);
  }

  /** A player session used from `place`; resolves true when that raised session_multi_place. */
  sessionSeen(input: SessionUse): Promise<boolean> {
    return this.rules.sessionSeen(this.db, input);
  }
}
