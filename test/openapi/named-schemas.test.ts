import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTypes } from '../../packages/client/scripts/generate-types';
import { startTestApp, type TestApp } from '../support/harness';

/**
 * What a code generator makes of the served /openapi.json: openapi-typescript (the generator the client
 * package uses) turns it into TypeScript, and the TypeScript 5 compiler it runs on (the client package's)
 * reads the result back, so the test sees the named types a generator's user would see.
 */

// The root's TypeScript 7 has no compiler API; the client package keeps TypeScript 5 for openapi-typescript.
const ts = createRequire(join(__dirname, '../../packages/client/package.json'))('typescript');

interface Generated {
  /** components.schemas: each name and its fields, `name: type` (`name?: type` when optional). */
  shapes: Map<string, string[]>;
  /** Compiler errors of `probe`, a file compiled beside the generated types. */
  errorsOf: (probe: string) => string[];
}

function compile(source: string): Generated {
  const dir = mkdtempSync(join(tmpdir(), 'rbs-openapi-types-'));
  const file = join(dir, 'openapi.ts');
  writeFileSync(file, source);
  const options = { strict: true, noEmit: true, skipLibCheck: true, types: [], target: ts.ScriptTarget.ES2022 };
  const program = ts.createProgram([file], options);
  const checker = program.getTypeChecker();
  const components = program
    .getSourceFile(file)
    .statements.find((s: any) => ts.isInterfaceDeclaration(s) && s.name.text === 'components');
  const schemas = checker.getTypeOfSymbol(
    checker.getPropertyOfType(checker.getTypeAtLocation(components.name), 'schemas'),
  );
  const shapes = new Map<string, string[]>();
  for (const shape of checker.getPropertiesOfType(schemas)) {
    const fields = checker.getPropertiesOfType(checker.getTypeOfSymbol(shape)).map((field: any) => {
      const optional = (field.flags & ts.SymbolFlags.Optional) !== 0;
      return `${field.name}${optional ? '?' : ''}: ${checker.typeToString(checker.getTypeOfSymbol(field))}`;
    });
    shapes.set(shape.name, fields);
  }
  const errorsOf = (probe: string): string[] => {
    const probeFile = join(dir, `probe-${Math.random().toString(36).slice(2)}.ts`);
    writeFileSync(probeFile, probe);
    const checked = ts.createProgram([probeFile], options);
    return ts
      .getPreEmitDiagnostics(checked)
      .map((d: any) => ts.flattenDiagnosticMessageText(d.messageText, '\n') as string);
  };
  return { shapes, errorsOf };
}

/** Type-level equality: a probe that uses it compiles only when both sides are the same type. */
const PROBE_HEADER = [
  "import type { components, operations, paths, webhooks } from './openapi';",
  'type S = components["schemas"];',
  'type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;',
  'const same = <A, B>(_: Same<A, B>) => undefined;',
  'type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;',
  '',
].join('\n');

describe('types generated from the served /openapi.json (openapi-typescript)', () => {
  let t: TestApp;
  let generated: Generated;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    const doc = (await (await fetch(`${t.baseUrl}/openapi.json`)).json()) as Record<string, unknown>;
    generated = compile(await renderTypes(doc));
  }, 120_000);
  afterAll(async () => t?.close());

  it("name every shared shape: bets, rounds, sessions, settlements, each surface's errors, webhooks", () => {
    expect([...generated.shapes.keys()]).toEqual(
      expect.arrayContaining([
        // Surface A (Crash).
        'PlaceBetRequest',
        'PlacedBet',
        'CashoutRequest',
        'CashoutResult',
        'CrashBet',
        'CrashBetList',
        'CrashRound',
        'PartnerError',
        'PartnerFault',
        // Surface B (Stock Race, seamless wallet).
        'LaunchSessionRequest',
        'LaunchedSession',
        'ReserveRequest',
        'ReservedBet',
        'StockRaceBet',
        'StockRaceBetList',
        'StockRaceRound',
        'Settlement',
        'SettlementList',
        'WalletSettleRequest',
        'OperatorError',
        'OperatorFault',
        // Webhook management (both surfaces) and the webhook events.
        'ApiError',
        'WebhookEndpoint',
        'WebhookEndpointWithSecret',
        'WebhookDelivery',
        'WebhookDeliveryDetail',
        'RoundOpenedEvent',
        'RoundClosedEvent',
        'BetSettledEvent',
        'ComplianceFlagEvent',
        'WebhookTestEvent',
        'RoundEventData',
        'BetSettledData',
      ]),
    );
  });

  it('give the named shapes their fields and types', () => {
    const { shapes } = generated;
    expect(shapes.get('CrashBet')).toEqual([
      'amount: number',
      'auto_cashout: number | null',
      'bet_id: string',
      'cashout_kind: string | null',
      'external_user_id: string',
      'livemode: boolean',
      'multiplier: number | null',
      'payout: number | null',
      'placed_at: number',
      'round_id: string',
      'round_number: number',
      'settled_at: number | null',
      'status: string',
    ]);
    expect(shapes.get('PlaceBetRequest')).toEqual([
      'amount: number',
      'auto_cashout?: number | null | undefined',
      'external_user_id: string',
    ]);
    expect(shapes.get('PartnerError')).toEqual(['code: string', 'error: string', 'trace_id?: string | undefined']);
    expect(shapes.get('OperatorError')).toEqual(['error: string', 'message: string']);
    expect(shapes.get('LaunchedSession')).toEqual(['expires_at: number', 'launch_url: string', 'session_id: string']);
    // The page's items are the bet (the probe below checks it is the very same type).
    expect(shapes.get('CrashBetList')).toEqual([
      expect.stringMatching(/^data: \{ amount: number; .*\}\[\]$/),
      'has_more: boolean',
    ]);
    expect(shapes.get('SettlementList')).toContain('has_more: boolean');
    expect(shapes.get('StockRaceRound')).toEqual(
      expect.arrayContaining(['round_id: string', 'symbols: string[]', 'race_ms: number', 'seed: string | null']),
    );
    expect(shapes.get('BetSettledEvent')).toEqual(
      expect.arrayContaining(['id: string', 'type: "bet.settled"', 'created_at: number', 'livemode: boolean']),
    );
  });

  it('reference the named shapes from the operations and the webhooks, rather than copies of them', () => {
    const probe = `${PROBE_HEADER}
same<Json<operations["getPartnerBetsByBetId"]["responses"][200]>, S["CrashBet"]>(true);
same<Json<operations["getPartnerBets"]["responses"][200]>["data"][number], S["CrashBet"]>(true);
same<Json<operations["postPartnerPlaceBet"]["responses"][400]>, S["PartnerError"]>(true);
same<Json<operations["postPartnerPlaceBet"]["responses"][503]>, S["PartnerFault"]>(true);
type PlaceBetBody = NonNullable<operations["postPartnerPlaceBet"]["requestBody"]>["content"]["application/json"];
same<PlaceBetBody, S["PlaceBetRequest"]>(true);
same<Json<operations["postOperatorBetsReserve"]["responses"][409]>, S["OperatorError"]>(true);
type Settlements = Json<operations["getOperatorSettlements"]["responses"][200]>["settlements"];
same<Settlements[number], S["Settlement"]>(true);
same<Json<operations["postOperatorSessionsLaunch"]["responses"][200]>, S["LaunchedSession"]>(true);
type BetSettledBody = NonNullable<webhooks["bet.settled"]["post"]>["requestBody"];
same<BetSettledBody, { content: { "application/json": S["BetSettledEvent"] } }>(true);
same<S["RoundOpenedEvent"]["data"], S["RoundEventData"]>(true);
same<paths["/v1/rounds/current"]["get"], operations["getOperatorRoundsCurrent"]>(true);
`;
    expect(generated.errorsOf(probe)).toEqual([]);
    // The probe can fail: a shape that is not the referenced one is refused.
    const wrong = `${PROBE_HEADER}
same<Json<operations["getPartnerBetsByBetId"]["responses"][200]>, S["PlacedBet"]>(true);
`;
    expect(generated.errorsOf(wrong)).toEqual([expect.stringContaining('not assignable')]);
  });
});
