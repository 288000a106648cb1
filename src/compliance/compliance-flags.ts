import type { Database } from '../store/database';
import type { ComplianceService, FlagFilter, ListedFlag, SessionUse } from './compliance-service';

/**
 * What the surfaces ask of compliance (the flag list on both APIs, the dashboard and the CLI; the
 * player page's session sightings), bound to the store so that no surface handles it.
 */
export class ComplianceFlags {
  constructor(
    private readonly db: Database,
    private readonly rules: ComplianceService,
  ) {}

  /** Newest first, each with its acknowledgement; every operator's when `scope` is null (the CLI). */
  list(scope: string | null, filter: FlagFilter = {}): Promise<ListedFlag[]> {
    return this.rules.listFlags(scope, filter, this.db);
  }

  /** The same list as pages: a page of flags and whether another follows (`has_more`). */
  page(scope: string | null, filter: FlagFilter = {}): Promise<{ flags: ListedFlag[]; hasMore: boolean }> {
    return this.rules.pageOfFlags(scope, filter, this.db);
  }

  /**
   * Marks a flag of this operator (any operator's when `scope` is null: the CLI) as dealt with, by `by`
   * at `now`; a second acknowledgement keeps the first. NOT_FOUND for another operator's flag.
   */
  acknowledge(scope: string | null, flagId: string, by: string, now: number): Promise<ListedFlag> {
    return this.rules.acknowledgeFlag(this.db, { scope, flagId, by, now });
  }

  /** A player session used from `place`; resolves true when that raised session_multi_place. */
  sessionSeen(input: SessionUse): Promise<boolean> {
    return this.rules.sessionSeen(this.db, input);
  }
}
