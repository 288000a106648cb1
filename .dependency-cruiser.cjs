/**
 * Import boundaries of the service (see "Import direction" in docs/architecture.md).
 *
 * Today's code already breaks some of these rules; those violations are recorded in
 * import-boundaries.known-violations.json and ignored, so `npm run lint` fails only on a NEW violation or cycle.
 * The restructure removes the recorded ones; after removing some, regenerate the file with
 * `npm run lint:baseline` so that they cannot come back. Never regenerate it to admit a new violation.
 */

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'surface-imported-from-outside',
      comment:
        'src/http and src/dashboard are surfaces: they call services, nothing calls them. Only the composition ' +
        'root (src/app.ts) wires them in, and tests drive them.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(http|dashboard)/', '^src/app\\.ts$'] },
      to: { path: '^src/(http|dashboard)/' },
    },
    {
      name: 'cli-imported',
      comment: 'The CLI is an entry point: nothing in the service imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'cli-imports-http',
      comment: 'The CLI is a surface of its own: it calls services, not HTTP routes or plugins.',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'foundation-imports-service-code',
      comment:
        'config, clock, errors, money, signing, redis and ids are the bottom layer that every folder may use: ' +
        'they import nothing else of the service. A default or type they need from a domain folder moves down ' +
        'here instead (config/game-defaults.ts).',
      severity: 'error',
      from: { path: '^src/(config|clock|errors|money|signing|redis|ids)/' },
      to: { path: '^src/', pathNot: '^src/(config|clock|errors|money|signing|redis|ids)/' },
    },
    {
      name: 'store-imports-domain',
      comment: 'The store is below every repository: it knows SQL and its adapters, not what the rows mean.',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: '^src/(store|config|clock|errors|money|ids)/' },
    },
    {
      name: 'outbox-imports-domain',
      comment:
        'The outbox engine is below webhooks and wallet: it sees an outbox only through the repository and ' +
        'sender it is given, so what it sends or stores never reaches into it.',
      severity: 'error',
      from: { path: '^src/outbox/' },
      to: { path: '^src/', pathNot: '^src/(outbox|store|observability|config|clock|errors|money|ids)/' },
    },
    {
      name: 'engine-imports-a-game',
      comment:
        'The round engine knows a game only through its GameDriver; games/crash and games/stock-race import the ' +
        'engine, and what spans all games (games/round-presenter.ts) sits above both.',
      severity: 'error',
      from: { path: '^src/games/engine/' },
      to: { path: '^src/games/', pathNot: '^src/games/engine/' },
    },
    {
      name: 'surface-imports-store',
      comment:
        'Surfaces (HTTP routes, dashboard, player page) and the CLI call services; only repositories, behind the ' +
        'services, touch the store. A surface that needs a read asks the service that owns the aggregate.',
      severity: 'error',
      from: { path: '^src/(http|dashboard|cli)/' },
      to: { path: '^src/store/' },
    },
    {
      name: 'folder-cycle',
      comment:
        'Folders depend in one direction (the table in docs/architecture.md, "Import direction"). ' +
        'A cycle between folders means neither can be understood, tested or moved without the other.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'file-cycle',
      comment:
        'Inside a folder too, files import one way: a type two files share lives in a module of its own ' +
        '(bets/bet.ts, sessions/session.ts, webhooks/domain-event.ts), not in the service that uses it.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that does not resolve is a typo or a missing dependency.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests may import any layer to drive it; they are not part of the import graph being checked.
    exclude: { path: '(^|/)node_modules/|\\.d\\.ts$|\\.test\\.ts$|^test/' },
    // Type-only imports couple folders as much as value imports do, so they count.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
    // TypeScript 7 ships no JavaScript compiler API, so dependency-cruiser parses TypeScript with swc.
    parser: 'swc',
    cache: false,
  },
};
