import type { Game } from './round';

/** Where a chain came from: generated here, or a fixed test fixture. */
export type ChainOrigin = 'generated' | 'fixture';

export interface ChainRecord {
  chainId: string;
  game: Game;
  length: number;
  origin: ChainOrigin;
  commitment: string;
  committedAt: number;
  contribution: string | null;
  contributor: string | null;
  contributionAutomatic: boolean | null;
  salt: string | null;
  saltFixedAt: number | null;
  firstPlayedIdx: number | null;
  firstPlayedAt: number | null;
}
