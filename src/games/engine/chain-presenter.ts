import type { ChainRecord } from './chain';
import type { FairChainService } from './fair-chain';

/** A hash chain's public record as the fairness API and the admin CLI show it. */
export function presentChain(chains: FairChainService, c: ChainRecord): Record<string, unknown> {
  return {
    chain_id: c.chainId,
    game: c.game,
    length: c.length,
    origin: c.origin,
    status: chains.statusOf(c),
    commitment: c.commitment,
    committed_at: c.committedAt,
    contribution: c.contribution,
    contributor: c.contributor,
    contribution_automatic: c.contributionAutomatic,
    salt: c.salt,
    salt_fixed_at: c.saltFixedAt,
    first_played_idx: c.firstPlayedIdx,
    first_played_at: c.firstPlayedAt,
  };
}
