import { type CliCommand, integerOption, operatorFilter, stringOption } from '../cli-kit';

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
        startingAfter: stringOption(v['starting-after'], 'starting-after'),
        limit,
      });
      return { flags };
    },
  },
];
