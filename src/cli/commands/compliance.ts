import { type CliCommand, integerOption, operatorFilter, stringOption, UsageError } from '../cli-kit';

/** The HTTP API's bounds for the same list (GET /compliance/flags): the service would clamp silently. */
const MAX_LIMIT = 1000;

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
      state: { type: 'string', description: 'open (not acknowledged yet) | acknowledged; both when absent' },
      limit: { type: 'string', description: `at most this many (default 100, 1 to ${MAX_LIMIT})` },
      'starting-after': { type: 'string', description: 'the last flag id of the previous page: the next page' },
    },
    async run(app, v) {
      const limit = integerOption(v.limit, 'limit', 1, MAX_LIMIT);
      // An empty or mistyped --operator used to answer an empty list, read as "no flags": refused.
      const operatorId = await operatorFilter(app, v.operator);
      const flags = await app.services.complianceFlags.list(operatorId ?? null, {
        // `--player "$UNSET"` matched no player: an empty list that read as "no flags for this player".
        rule: stringOption(v.rule, 'rule'),
        player: stringOption(v.player, 'player'),
        state: stringOption(v.state, 'state'),
        startingAfter: stringOption(v['starting-after'], 'starting-after'),
        limit,
      });
      return { flags };
    },
  },
  {
    path: ['compliance', 'ack'],
    summary: 'Acknowledge a compliance flag (records who and when; a second ack keeps the first). Prints the flag.',
    options: {
      flag: { type: 'string', required: true, description: 'the flag id (flag_…)' },
      by: { type: 'string', required: true, description: 'who acknowledges it (recorded as admin:<by>)' },
    },
    async run(app, v) {
      const flagId = String(v.flag);
      // The dashboard records its user's email; an administrator is told apart by the prefix.
      const by = `admin:${String(v.by).trim()}`;
      if (by === 'admin:') throw new UsageError('--by must name who acknowledges the flag');
      const flag = await app.services.complianceFlags.acknowledge(null, flagId, by, app.services.clock.now());
      return { flag };
    },
  },
];
