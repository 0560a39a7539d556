// cli/flags.ts: flags declared once give parsing, errors and --help; every legate command's help
// lists every flag it declares.
import { describe, expect, it } from 'vitest';
import { COMMANDS, usage } from '../../cli/commands/index.js';
import { UsageError, command, helpText, parseFlags } from '../../cli/flags.js';

const demo = command({
  name: 'demo',
  summary: 'a command for the tests',
  flags: {
    config: { type: 'string', short: 'c', required: true, placeholder: 'DIR', description: 'where' },
    port: { type: 'port', default: 8080, description: 'the port' },
    upstream: { type: 'hostPort', default: '127.0.0.1:9977', description: 'the upstream' },
    mode: { type: 'choice', choices: ['local', 'remote'], default: 'local', description: 'the mode' },
    level: { type: 'choice', choices: ['debug', 'info'], description: 'the level' },
    debug: { type: 'boolean', description: 'more output' },
    name: { type: 'string', description: 'a name' },
    seconds: { type: 'int', default: 15, min: 1, max: 60, description: 'how long' },
  },
  run: () => 0,
});

describe('parseFlags', () => {
  it('applies defaults and types every value', () => {
    const v = parseFlags(demo.flags, ['-c', 'examples']);
    expect(v).toEqual({
      config: 'examples',
      port: 8080,
      upstream: { host: '127.0.0.1', port: 9977 },
      mode: 'local',
      level: undefined,
      debug: false,
      name: undefined,
      seconds: 15,
    });
  });

  it('parses given values, --flag=value and IPv6 host:port', () => {
    const v = parseFlags(demo.flags, ['--config=dir', '--port', '0', '--upstream', '[::1]:81', '--mode=remote', '--debug', '--name', 'x']);
    expect(v).toMatchObject({ config: 'dir', port: 0, upstream: { host: '::1', port: 81 }, mode: 'remote', debug: true, name: 'x' });
  });

  it('takes --flag=true and --flag=false for booleans (as glooctl users type them)', () => {
    expect(parseFlags(demo.flags, ['-c', 'd', '--debug=false'])?.debug).toBe(false);
    expect(parseFlags(demo.flags, ['-c', 'd', '--debug=true'])?.debug).toBe(true);
    expect(parseFlags(demo.flags, ['-c', 'd', '--no-debug'])?.debug).toBe(false);
    expect(() => parseFlags(demo.flags, ['-c', 'd', '--debug=maybe'])).toThrow('--debug: expected true or false, got "maybe"');
  });

  it('says what is wrong, as a UsageError', () => {
    const cases: [string[], string][] = [
      [[], '--config DIR is required'],
      [['-c', 'd', '--port', 'abc'], '--port: expected a port number, got "abc"'],
      [['-c', 'd', '--port', '70000'], '--port: expected a port number, got "70000"'],
      [['-c', 'd', '--upstream', 'nohost'], '--upstream: expected HOST:PORT, got "nohost"'],
      [['-c', 'd', '--mode', 'cloud'], '--mode: expected local or remote, got "cloud"'],
      [['-c', 'd', '--seconds', '0'], '--seconds: expected a whole number from 1 to 60, got "0"'],
      [['-c', 'd', '--seconds', '1.5'], '--seconds: expected a whole number from 1 to 60, got "1.5"'],
      [['-c', 'd', '--bogus'], 'unknown flag --bogus; see --help for the flags'],
      [['-c', 'd', '--prot', '1'], 'unknown flag --prot; did you mean --port?'],
      [['-c', 'd', '--nmae', 'x'], 'unknown flag --nmae; did you mean --name?'],
      [['-c', 'd', '--name'], '--name needs a value'],
      [['-c', 'd', 'extra'], "unexpected argument 'extra'"],
    ];
    for (const [args, message] of cases) {
      let error: unknown;
      try {
        parseFlags(demo.flags, args);
      } catch (e) {
        error = e;
      }
      expect(error, args.join(' ')).toBeInstanceOf(UsageError);
      expect((error as Error).message, args.join(' ')).toContain(message);
    }
  });

  it("never passes on Node's own parser wording", () => {
    for (const args of [['--bogus'], ['-z'], ['-c'], ['x']]) {
      expect(() => parseFlags(demo.flags, args)).toThrow(UsageError);
      expect(() => parseFlags(demo.flags, args)).not.toThrow(/To specify|Unknown option|argument missing/);
    }
  });

  it('takes repeated string flags, and boolean flags that default to on', () => {
    const flags = {
      file: { type: 'strings', short: 'f', description: 'files' },
      debug: { type: 'boolean', default: true, description: 'on unless --no-debug' },
    } as const;
    expect(parseFlags(flags, [])).toEqual({ file: [], debug: true });
    expect(parseFlags(flags, ['-f', 'a', '--file=b', '--no-debug'])).toEqual({ file: ['a', 'b'], debug: false });
    expect(parseFlags(flags, ['--debug=false'])?.debug).toBe(false);
  });

  it('returns undefined for --help and -h', () => {
    expect(parseFlags(demo.flags, ['--help'])).toBeUndefined();
    expect(parseFlags(demo.flags, ['-h'])).toBeUndefined();
  });
});

describe('helpText', () => {
  it('has the usage line with required flags, the summary, and each flag with its default', () => {
    const text = helpText('legate', demo);
    expect(text.split('\n').slice(0, 3)).toEqual(['Usage: legate demo --config DIR [flags]', '', 'a command for the tests']);
    expect(text).toMatch(/-c, --config DIR +where \(required\)/);
    expect(text).toMatch(/ {4}--port PORT +the port \(default 8080\)/);
    expect(text).toMatch(/--mode local\|remote +the mode \(default local\)/);
    expect(text).toMatch(/--debug +more output\n/);
    expect(text).toMatch(/-h, --help +show this help/);
  });

  it('lists every flag of every legate command', () => {
    for (const c of COMMANDS) {
      const text = helpText('legate', c);
      for (const name of Object.keys(c.flags)) expect(text, `${c.name} --${name}`).toContain(`--${name}`);
      expect(usage()).toContain(`  ${c.name} `);
    }
  });
});
