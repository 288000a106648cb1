import type { SqlExecutor } from '../store/database';
import { operatorRepository } from './operator-repository';

// An operator's mode is fixed when it is created, so what this process once read stays true.
const modeSeen = new Map<string, boolean>();

/** Whether an operator plays in test mode (sandbox): its bets stay out of live figures such as metrics. */
export async function isTestOperator(tx: SqlExecutor, operatorId: string): Promise<boolean> {
  const known = modeSeen.get(operatorId);
  if (known !== undefined) return known;
  return (await testModeOperators(tx, [operatorId])).has(operatorId);
}

/**
 * The test-mode operators among these (null, a live round's owner, is never one): the events they
 * cause carry livemode: false.
 */
export async function testModeOperators(tx: SqlExecutor, operatorIds: Iterable<string | null>): Promise<Set<string>> {
  const ids = [...new Set([...operatorIds].filter((id): id is string => id !== null))];
  const unknown = ids.filter((id) => !modeSeen.has(id));
  if (unknown.length > 0) {
    for (const r of await operatorRepository.testModes(tx, unknown)) modeSeen.set(r.id, r.test);
    if (modeSeen.size > 10_000) modeSeen.clear();
  }
  return new Set(ids.filter((id) => modeSeen.get(id) === true));
}
