/**
 * The house rules of src/ (issue 12, STYLE.md), checked by test/platform/architecture.test.ts:
 * no import loop between files and no upward import from a lower layer (loops between modules are
 * checked by that test on the module graph, which dependency-cruiser's rules cannot express).
 * Known exceptions are listed by name with the reason; do not add a silent ignore.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'no-file-cycle',
      severity: 'error',
      comment: 'An import loop between files (type-only imports count too: they couple the files the same way).',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'lower-layer-imports-module',
      severity: 'error',
      comment: 'db, lib, http, upstream, jobs and sandbox are lower layers: they never import from src/modules/.',
      from: { path: '^src/(db|lib|http|upstream|jobs|sandbox)/' },
      to: { path: '^src/(modules/|app\\.ts$)' },
    },
    {
      name: 'lib-is-the-bottom',
      severity: 'error',
      comment:
        'src/lib/ is the bottom layer: besides other lib files it may only import the AppContext and Config types.',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/(lib/|context\\.ts$|config\\.ts$)' },
    },
    {
      name: 'only-the-composition-root-imports-app',
      severity: 'error',
      comment: 'app.ts wires everything; only main.ts and the CLI may import it.',
      from: { path: '^src/', pathNot: '^src/(main\\.ts|cli/)' },
      to: { path: '^src/app\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js'],
    },
  },
};
