import { DomainError } from '../../errors/codes';
import type { Operator, OperatorSettingsPatch } from '../../operators/operator';
import { MAX_OPERATOR_NAME_LENGTH } from '../../operators/operators';
import { type CliCommand, integerOption, MAX_OVERLAP_MS, stringOption, UsageError } from '../cli-kit';

export function presentOperator(o: Operator): Record<string, unknown> {
  return {
    operator_id: o.id,
    name: o.name,
    api_key: o.apiKey,
    wallet_url: o.walletUrl,
    settles_to_wallet: o.settlesToWallet,
    status: o.status,
    mode: o.mode,
    livemode: o.mode === 'live',
    previous_secret_expires_at: o.previousSecretExpiresAt,
    settings: o.settings,
    created_at: o.createdAt,
  };
}

const id = { type: 'string', required: true, description: 'the operator id (op_…)' } as const;

export const operatorCommands: CliCommand[] = [
  {
    path: ['operator', 'create'],
    summary: 'Create an operator; prints its API key and secret (the secret is shown only here).',
    options: {
      name: {
        type: 'string',
        required: true,
        description: `display name, 1 to ${MAX_OPERATOR_NAME_LENGTH} characters, no control characters`,
      },
      'wallet-url': { type: 'string', description: 'base URL of the operator wallet (Stock Race settlements)' },
      mode: { type: 'string', description: 'live (default) or test: a sandbox operator with pk_test_/sk_test_ keys' },
    },
    async run(app, v) {
      const mode = stringOption(v.mode, 'mode') ?? 'live';
      if (mode !== 'live' && mode !== 'test') throw new DomainError('VALIDATION_FAILED', '--mode must be live or test');
      // `--wallet-url "$UNSET"` used to create an operator that settles to no wallet, without a word.
      const walletUrl = stringOption(v['wallet-url'], 'wallet-url') ?? null;
      const created = await app.services.operators.create({ name: String(v.name), walletUrl, mode });
      return { ...presentOperator(created), api_secret: created.apiSecret };
    },
  },
  {
    path: ['operator', 'list'],
    summary: 'List operators (never their secrets).',
    options: {},
    async run(app) {
      return { operators: (await app.services.operators.list()).map(presentOperator) };
    },
  },
  {
    path: ['operator', 'rotate-secret'],
    summary:
      'Issue a new API secret; the old one keeps working for the overlap (SECRET_ROTATION_OVERLAP_MS or --overlap-ms).',
    options: { id, 'overlap-ms': { type: 'string', description: 'override the overlap in milliseconds' } },
    async run(app, v) {
      const overlap = integerOption(v['overlap-ms'], 'overlap-ms', 0, MAX_OVERLAP_MS);
      const r = await app.services.operators.rotateSecret(String(v.id), overlap);
      return { operator_id: v.id, api_secret: r.apiSecret, previous_secret_expires_at: r.previousSecretExpiresAt };
    },
  },
  {
    path: ['operator', 'disable'],
    summary: "Refuse every request signed with this operator's key.",
    options: { id },
    async run(app, v) {
      return presentOperator(await app.services.operators.setStatus(String(v.id), 'disabled'));
    },
  },
  {
    path: ['operator', 'enable'],
    summary: 'Re-enable a disabled operator.',
    options: { id },
    async run(app, v) {
      return presentOperator(await app.services.operators.setStatus(String(v.id), 'active'));
    },
  },
  {
    path: ['operator', 'set-wallet'],
    summary: 'Set (or with --clear remove) the wallet base URL settlements are sent to.',
    options: {
      id,
      url: { type: 'string', description: 'wallet base URL' },
      clear: { type: 'boolean', description: 'remove the wallet URL' },
    },
    async run(app, v) {
      // Refused before anything is written: with both, one of the two wishes would be silently dropped.
      if (v.clear && v.url !== undefined) throw new UsageError('give either --url or --clear, not both');
      if (!v.clear && !v.url) throw new UsageError('give --url or --clear');
      return presentOperator(await app.services.operators.setWalletUrl(String(v.id), v.clear ? null : String(v.url)));
    },
  },
  {
    path: ['operator', 'settings'],
    summary:
      'Change product settings: --json with a partial settings object ' +
      '(currencies, stake_limits, payout_limits, crash, stock_race, rate_limit, compliance); the fields given in ' +
      'crash, stock_race and compliance replace theirs, the other keys are replaced whole. ' +
      'Invalid settings are refused.',
    options: { id, json: { type: 'string', required: true, description: 'partial settings as JSON' } },
    async run(app, v) {
      // Checked by the service against the settings schema: a bad value is VALIDATION_FAILED naming the field.
      let patch: OperatorSettingsPatch;
      try {
        patch = JSON.parse(String(v.json)) as OperatorSettingsPatch;
      } catch {
        throw new DomainError('MALFORMED_JSON', '--json is not valid JSON');
      }
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
        throw new DomainError('VALIDATION_FAILED', '--json must be an object');
      return presentOperator(await app.services.operators.updateSettings(String(v.id), patch));
    },
  },
];
