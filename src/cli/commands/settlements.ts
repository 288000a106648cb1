import { DomainError } from '../../errors/codes';
import { presentSettlement, type SettlementStatus } from '../../wallet/settlements';
import type { CliCommand } from '../cli-kit';

const STATUSES: SettlementStatus[] = ['pending', 'delivered'];

/** Wallet settlements (settle calls to operators' wallets): inspect them, and send one again now. */
export const settlementCommands: CliCommand[] = [
  {
    path: ['settlements', 'list'],
    summary: 'List wallet settlements, oldest first (--status pending: not yet confirmed by the wallet).',
    options: {
      status: { type: 'string', description: 'pending | delivered' },
      operator: { type: 'string', description: 'only this operator (op_…)' },
      limit: { type: 'string', description: 'at most this many (default 100)' },
    },
    async run(app, v) {
      const status = v.status as SettlementStatus | undefined;
      if (status !== undefined && !STATUSES.includes(status))
        throw new DomainError('VALIDATION_FAILED', '--status must be pending or delivered');
      const limit = v.limit === undefined ? 100 : Number(v.limit);
      if (!Number.isSafeInteger(limit) || limit < 1)
        throw new DomainError('VALIDATION_FAILED', '--limit must be a positive integer');
      const rows = await app.services.settlements.list({ status, operatorId: v.operator as string | undefined, limit });
      return { settlements: rows.map(presentSettlement) };
    },
  },
  {
    path: ['settlements', 'retry'],
    summary:
      'Make a pending settlement due now (same idempotency_key); --resend also sends a delivered one ' +
      'again. Shows its attempts.',
    options: {
      bet: { type: 'string', required: true, description: 'the bet id' },
      resend: {
        type: 'boolean',
        description: 'also re-send a settlement the wallet already confirmed (same idempotency_key)',
      },
    },
    async run(app, v) {
      const betId = String(v.bet);
      // The same rule as the dashboard's Retry now button (SettlementService.retry).
      const s = await app.services.settlements.retry(null, betId, { resendDelivered: v.resend === true });
      const attempts = await app.services.settlements.attempts(betId);
      return { ...presentSettlement(s), attempt_log: attempts };
    },
  },
];
