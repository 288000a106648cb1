import { DomainError } from '../../errors/codes';
import { presentSettlement, type SettlementStatus } from '../../wallet/settlements';
import { type CliCommand, integerOption, operatorFilter, stringOption } from '../cli-kit';

const STATUSES: SettlementStatus[] = ['pending', 'delivered'];

/** Surface B's bound on the same list (GET /v1/settlements). */
const MAX_LIMIT = 1000;

/** Wallet settlements (settle calls to operators' wallets): inspect them, and send one again now. */
export const settlementCommands: CliCommand[] = [
  {
    path: ['settlements', 'list'],
    summary: 'List wallet settlements, oldest first (--status pending: not yet confirmed by the wallet).',
    options: {
      status: { type: 'string', description: 'pending | delivered' },
      operator: { type: 'string', description: 'only this operator (op_…)' },
      limit: { type: 'string', description: `at most this many (default 100, 1 to ${MAX_LIMIT})` },
      'starting-after': { type: 'string', description: 'the last bet id of the previous page: list what follows it' },
    },
    async run(app, v) {
      const status = stringOption(v.status, 'status') as SettlementStatus | undefined;
      if (status !== undefined && !STATUSES.includes(status))
        throw new DomainError('VALIDATION_FAILED', '--status must be pending or delivered');
      // Number() took `1e3`, `0x10` and `5.0`, and no upper bound: the strict parse the other lists use.
      const limit = integerOption(v.limit, 'limit', 1, MAX_LIMIT) ?? 100;
      // An empty --operator used to list every operator's settlements: refused, as is an unknown one.
      const operatorId = await operatorFilter(app, v.operator);
      // Without --operator, live operators' only: what the wallet alerts count (a sandbox's simulated
      // outage would otherwise fill the oldest-first page ahead of the live row that fired them).
      const mode = operatorId === undefined ? 'live' : undefined;
      const startingAfter = stringOption(v['starting-after'], 'starting-after');
      const rows = await app.services.settlements.list({ status, operatorId, mode, limit, startingAfter });
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
