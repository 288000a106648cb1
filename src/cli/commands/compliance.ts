import { DomainError } from '../../errors/codes';
import type { CliCommand } from '../cli-kit';

export const complianceCommands: CliCommand[] = [
  {
    path: ['compliance', 'flags'],
    summary: 'List compliance flags, newest first (all operators unless --operator).',
    options: {
      operator: { type: 'string', description: 'only this operator (op_…)' },
      rule: {
        type: 'string',
        description: 'large_stake | large_payout | bet_velocity | machine_timing | session_multi_place',
      },
      player: { type: 'string', description: 'only this player' },
      limit: { type: 'string', description: 'at most this many (default 100, up to 1000)' },
    },
    async run(app, v) {
      const limit = typeof v.limit === 'string' ? Number(v.limit) : undefined;
      if (limit !== undefined && !Number.isSafeInteger(limit))
        throw new DomainError('VALIDATION_FAILED', '--limit must be an integer');
      const flags = await app.services.complianceFlags.list(typeof v.operator === 'string' ? v.operator : null, {
        rule: typeof v.rule === 'string' ? v.rule : undefined,
        player: typeof v.player === 'string' ? v.player : undefined,
        limit,
      });
      return { flags };
    },
  },
];
