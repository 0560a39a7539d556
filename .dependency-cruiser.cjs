// Layering of DESIGN.md §2, checked by dependency-cruiser in `make typecheck`: imports flow one way,
// features never import each other, no cycles. Product folders only (tests, benches and scripts may
// reach anywhere, as they are not shipped).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'the module graph has no cycles', from: {}, to: { circular: true } },
    {
      name: 'controller-not-extensions',
      severity: 'error',
      comment: 'the controller never imports extension code (share contracts via common/)',
      from: { path: '^controller/' },
      to: { path: '^extensions/' },
    },
    {
      name: 'extensions-not-controller',
      severity: 'error',
      comment: 'extensions never import controller code (share contracts via common/)',
      from: { path: '^extensions/' },
      to: { path: '^controller/' },
    },
    {
      name: 'api-is-the-bottom',
      severity: 'error',
      comment: 'controller/api is the bottom layer of the controller (it composes the option schemas features own)',
      from: { path: '^controller/api/' },
      to: { path: '^controller/', pathNot: ['^controller/api/', '^controller/translate/features/[^/]+/schema\\.ts$'] },
    },
    {
      name: 'feature-schemas-are-leaves',
      severity: 'error',
      comment: "a feature's schema.ts (composed by controller/api) uses only the api's building blocks",
      from: { path: '^controller/translate/features/[^/]+/schema\\.ts$' },
      to: { path: '^(controller|common|envoy)/', pathNot: '^controller/api/(primitives|schemas)\\.ts$' },
    },
    {
      name: 'translate-is-pure',
      severity: 'error',
      comment: 'translation is pure: no sources, no xDS server (its snapshot types only)',
      from: { path: '^controller/translate/' },
      to: { path: '^controller/(source|xds|admin|bootstrap|discovery)/', pathNot: '^controller/xds/types\\.ts$' },
    },
    {
      name: 'sources-only-read',
      severity: 'error',
      comment: 'sources neither translate nor serve',
      from: { path: '^controller/source/' },
      to: { path: '^controller/(translate|xds)/' },
    },
    {
      name: 'xds-only-serves',
      severity: 'error',
      comment: 'the xDS server only serves snapshots',
      from: { path: '^controller/xds/' },
      to: { path: '^controller/(translate|source)/' },
    },
    {
      name: 'features-independent',
      severity: 'error',
      comment: 'features never import each other; features/index.ts composes them',
      from: { path: '^controller/translate/features/([^/]+)/' },
      to: { path: '^controller/translate/features/', pathNot: '^controller/translate/features/$1/' },
    },
    {
      name: 'features-through-their-index',
      severity: 'error',
      comment: 'code outside a feature uses it through its index.ts (or the list, features/index.ts)',
      from: { path: '^', pathNot: ['^controller/translate/features/', '^test/', '^bench/'] },
      to: {
        path: '^controller/translate/features/',
        pathNot: ['^controller/translate/features/(index|[^/]+/index)\\.ts$', '^controller/translate/features/[^/]+/schema\\.ts$'],
      },
    },
    {
      name: 'common-depends-on-none',
      severity: 'error',
      comment: 'common/ is shared by all and depends on none',
      from: { path: '^common/' },
      to: { path: '^(controller|extensions|cli|envoy)/' },
    },
    {
      name: 'product-not-tests-or-benches',
      severity: 'error',
      comment: 'product code never imports tests or benchmarks',
      from: { path: '^(common|controller|extensions|envoy|cli)/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|\\.venv|extensions/wasm)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
