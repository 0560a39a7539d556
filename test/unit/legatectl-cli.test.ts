// legatectl's command line (cli/ctl/main.ts on cli/flags.ts): per-command help, global flags before
// the command, clear usage errors (exit 2) with a did-you-mean, and the completion scripts. In-process,
// from a directory with no `legate run`, so nothing here reaches a server.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ctl, inScratchDirectory } from '../support/legatectl-in-process.js';

inScratchDirectory('legatectl-cli-');

describe('legatectl help', async () => {
  it("prints each command's own usage for --help, groups included", async () => {
    const cases: [string[], RegExp][] = [
      [['version', '--help'], /^Usage: legatectl version \[flags\]\n[\s\S]*-o, --output table\|yaml\|json/],
      [['proxy', '--help'], /^Usage: legatectl proxy <command> \[flags\]\n[\s\S]*\n {2}dump {2,}Envoy's \/config_dump/],
      [['debug', '--help'], /^Usage: legatectl debug <command> \[flags\]\n[\s\S]*\n {2}yaml /],
      [['proxy', 'dump', '--help'], /^Usage: legatectl proxy dump \[flags\]\n[\s\S]*--include-eds/],
      [['get', '-h'], /^Usage: legatectl get \[flags\] KIND \[NAME\]\n[\s\S]*-A, --all-namespaces[\s\S]*wide\|yaml\|json\|kube-yaml/],
      [['create', 'upstream', 'static', '--help'], /^Usage: legatectl create upstream static \[flags\] NAME\n[\s\S]*--static-hosts/],
      [['add', 'route', '--help'], /--path-prefix[\s\S]*--dest-name[\s\S]*--prefix-rewrite[\s\S]*-x, --index/],
      [['--help'], /^Usage: legatectl \[global flags\] <command> \[flags\]\n[\s\S]*check-crds[\s\S]*completion/],
    ];
    for (const [args, want] of cases) {
      const r = await ctl(...args);
      expect(r.stdout, args.join(' ')).toMatch(want);
      expect(r.status, args.join(' ')).toBe(0);
    }
    // a command's help lists the global flags under their own heading
    expect((await ctl('get', '--help')).stdout).toMatch(/\nGlobal flags:\n[\s\S]*--controller URL/);
  });
});

describe('legatectl flags', async () => {
  it('takes global flags before the command as well as after it', async () => {
    for (const args of [
      ['--controller', 'http://127.0.0.1:1', 'get', 'vs'],
      ['--controller=http://127.0.0.1:1', 'get', 'vs'],
      ['get', 'vs', '--controller', 'http://127.0.0.1:1'],
    ]) {
      const r = await ctl(...args);
      expect(r.stderr, args.join(' ')).toContain('cannot reach the Legate controller at http://127.0.0.1:1');
      expect(r.status).toBe(1);
    }
    const wrong = await ctl('--contoller', 'x', 'get', 'vs');
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('did you mean --controller?');
  });

  it('refuses an unknown flag, command or kind in one clear line with a suggestion, exit 2', async () => {
    const cases: [string[], string][] = [
      [['get', 'vs', '--outptu', 'json'], 'legatectl: unknown flag --outptu; did you mean --output?\n'],
      [['proxy', 'dump', '--include-ed'], 'legatectl: unknown flag --include-ed; did you mean --include-eds?\n'],
      [['prxy', 'url'], 'legatectl: unknown command "prxy"; did you mean proxy?'],
      [['proxy', 'dmp'], 'legatectl: unknown proxy command "dmp"; did you mean dump?'],
      [['get', 'virtualservce'], 'get: unknown kind "virtualservce"; did you mean virtualservices?'],
    ];
    for (const [args, message] of cases) {
      const r = await ctl(...args);
      expect(r.stderr, args.join(' ')).toContain(message);
      expect(r.stderr).not.toMatch(/To specify a positional|ERR_PARSE_ARGS/);
      expect(r.status, args.join(' ')).toBe(2);
    }
  });

  it('gives exit 2 for a bad -o on every command that has one', async () => {
    const cases: [string[], string][] = [
      [['get', 'vs', '-o', 'bogus'], '-o: expected table, wide, yaml, json or kube-yaml, got "bogus"'],
      [['check', '-o', 'bogus'], '-o: expected table or json, got "bogus"'],
      [['version', '-o', 'bogus'], '-o: expected table, yaml or json, got "bogus"'],
      [['validate', '-o', 'bogus', '-f', '-'], '-o: expected text or json, got "bogus"'],
      [['create', 'vs', 'x', '-o', 'bogus'], '-o: expected yaml, json or kube-yaml, got "bogus"'],
      [['check', '-x', 'virtual-servce'], 'did you mean virtual-services?'],
    ];
    for (const [args, message] of cases) {
      const r = await ctl(...args);
      expect(r.stderr, args.join(' ')).toContain(message);
      expect(r.status, args.join(' ')).toBe(2);
    }
  });

  it('prints what create would write with --dry-run, glooctl-style flags included', async () => {
    const vs = await ctl('create', 'vs', 'shop', '--domains', 'shop.example.com,www.shop.example.com', '--dry-run');
    expect(vs.stdout).toBe(
      'apiVersion: gateway.legate.dev/v1\nkind: VirtualService\nmetadata:\n  name: shop\n  namespace: legate-system\nspec:\n' +
        '  virtualHost:\n    domains:\n      - shop.example.com\n      - www.shop.example.com\n',
    );
    const us = await ctl(
      'create',
      'upstream',
      'static',
      '--name',
      'pets',
      '--static-hosts',
      'a.example.com:8080,b.example.com',
      '--dry-run',
    );
    expect(us.stdout).toContain(
      '  static:\n    hosts:\n      - addr: a.example.com\n        port: 8080\n      - addr: b.example.com\n        port: 80\n',
    );
    expect((await ctl('create', 'upstream', 'static', 'x', '--dry-run')).stderr).toContain('--static-hosts HOST:PORT is required');
    expect((await ctl('create', 'upstream', 'kube', 'x', '--dry-run')).stderr).toContain('--kube-service NAME is required');
    expect((await ctl('create', 'vs', 'Bad_Name', '--dry-run')).status).toBe(2);
  });
});

describe('legatectl completion', async () => {
  it('bash: completes commands, subcommands, flags and kinds', async () => {
    const script = (await ctl('completion', 'bash')).stdout;
    const complete = (...words: string[]): string[] => {
      const r = spawnSync(
        'bash',
        [
          '-c',
          `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}\n` +
            '_legatectl; echo "${COMPREPLY[@]}"',
        ],
        { encoding: 'utf8' },
      );
      return r.stdout.trim().split(/\s+/);
    };
    expect(complete('legatectl', 'pro')).toEqual(['proxy']);
    expect(complete('legatectl', 'proxy', 'd')).toEqual(['dump']);
    expect(complete('legatectl', 'get', '--all')).toEqual(['--all-namespaces']);
    expect(complete('legatectl', 'get', 'virtuals')).toEqual(['virtualservices']);
    expect(complete('legatectl', 'create', 'upstream', 'static', '--static-h')).toEqual(['--static-hosts']);
    expect(complete('legatectl', 'create', 'authconfig', '--enable-o')).toEqual(['--enable-oidc-auth', '--enable-opa-auth']);
    expect(complete('legatectl', 'create', 'authconfig', '--opa-')).toEqual(['--opa-query', '--opa-module-ref']);
  });

  it('zsh and fish scripts, and a clear error for another shell', async () => {
    expect((await ctl('completion', 'zsh')).stdout).toMatch(/^#compdef legatectl\n[\s\S]*bashcompinit/);
    expect((await ctl('completion', 'fish')).stdout).toContain(
      'complete -c legatectl -n "__fish_seen_subcommand_from get" -l all-namespaces -s A',
    );
    const bad = await ctl('completion', 'tcsh');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('expected bash, zsh or fish');
  });
});
