import { DomainError } from '../../errors/codes';
import { presentChain } from '../../games/engine/chain-presenter';
import { stringOption, type CliCommand } from '../cli-kit';

const chainOption = { type: 'string', required: true, description: 'the chain id (chain_…)' } as const;

/**
 * Hash chains (the public fairness record). `contribute` is how a production chain gets its salt
 * when a contribution is not posted through the public API: the value should come from a party
 * other than whoever runs the service (an operator, an auditor), made after the commitment is shown.
 */
export const fairnessCommands: CliCommand[] = [
  {
    path: ['fairness', 'list'],
    summary: 'List the hash chains with their commitment, salt and status.',
    options: { game: { type: 'string', description: 'crash or stock_race (default: both)' } },
    async run(app, v) {
      const game = stringOption(v.game, 'game');
      if (game !== undefined && game !== 'crash' && game !== 'stock_race') {
        throw new DomainError('VALIDATION_FAILED', '--game must be crash or stock_race');
      }
      const chains = await app.services.fairChains.list(game);
      return { chains: chains.map((c) => presentChain(app.services.fairChains, c)) };
    },
  },
  {
    path: ['fairness', 'contribute'],
    summary: "Fix a chain's salt from a contribution made after its commitment was published.",
    options: {
      chain: chainOption,
      value: { type: 'string', required: true, description: 'the contribution: 1 to 256 printable ASCII characters' },
      contributor: { type: 'string', description: 'who contributed it, as shown in the record (default: admin CLI)' },
    },
    async run(app, v) {
      const contributor = stringOption(v.contributor, 'contributor') ?? 'admin CLI';
      const record = await app.services.fairChains.contribute(String(v.chain), { contributor, value: String(v.value) });
      return presentChain(app.services.fairChains, record);
    },
  },
];
