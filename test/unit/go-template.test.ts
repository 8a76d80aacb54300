import { describe, expect, it } from 'vitest';
import { compileGoTemplate, isGoTemplateError } from '../../cli/go-template/template.ts';

/**
 * Go's text/template as kubectl's `-o go-template` runs it, over the shape `get -o json`
 * prints. The expected outputs are Go's (text/template and fmt), kubectl's idioms first.
 */
const LIST = {
  apiVersion: 'v1',
  kind: 'List',
  items: [
    {
      metadata: { name: 'web-1', labels: { app: 'web', version: 'v1' } },
      spec: { address: '10.0.0.1', ports: { http: 8080 }, weight: 1.5 },
      status: { conditions: [{ type: 'Healthy', status: 'True' }] },
    },
    { metadata: { name: 'db-1', labels: { app: 'db' } }, spec: { address: '10.0.0.5' } },
  ],
};

const DATA = {
  ...LIST,
  x: 2,
  m: { b: 2, a: 1, c: 3 },
  nums: [0, 1, 2, 3, 4],
  tags: ['a', 'b'],
  empty: [],
  nothing: null,
  withNull: [1, null],
  big: 1234567.5,
  secret: { user: 'YWRtaW4=', password: 'czNjcjN0' },
};

const run = (template: string, data: unknown = DATA) => compileGoTemplate(template).execute(data);
const ENTRY = LIST.items[0];

describe('kubectl idioms', () => {
  it.each([
    [String.raw`{{range .items}}{{.metadata.name}}{{"\n"}}{{end}}`, 'web-1\ndb-1\n'],
    [
      String.raw`{{range .items}}{{.metadata.name}}{{"\t"}}{{.spec.address}}{{"\n"}}{{end}}`,
      'web-1\t10.0.0.1\ndb-1\t10.0.0.5\n',
    ],
    [
      '{{range .items}}{{if .status}}{{.metadata.name}} has a status{{end}}{{end}}',
      'web-1 has a status',
    ],
    [
      '{{range $i, $e := .items}}{{range $k, $v := $e.metadata.labels}}{{$i}}:{{$e.metadata.name}}:{{$k}}={{$v}};{{end}}{{end}}',
      '0:web-1:app=web;0:web-1:version=v1;1:db-1:app=db;',
    ],
    ['{{range .items}}{{$.kind}}/{{.metadata.name}} {{end}}', 'List/web-1 List/db-1 '],
    [
      '{{range .items}}{{range .status.conditions}}{{if eq .type "Healthy"}}{{.status}}{{end}}{{end}}{{end}}',
      'True',
    ],
    [
      String.raw`{{range $k, $v := .secret}}{{$k}}={{$v | base64decode}}{{"\n"}}{{end}}`,
      'password=s3cr3t\nuser=admin\n',
    ],
    ['{{len .items}} entries', '2 entries'],
  ])('%s prints %j', (template, expected) => {
    expect(run(template)).toBe(expected);
  });

  it('reads one object as well as a List', () => {
    expect(run('{{index .metadata.labels "app"}} at {{.spec.address}}', ENTRY)).toBe(
      'web at 10.0.0.1',
    );
    expect(run('{{if .status}}has{{else}}none{{end}}', LIST.items[1])).toBe('none');
  });
});

describe('text, trim markers and comments', () => {
  it.each([
    ['{{23 -}} < {{- 45}}', '23<45'],
    ['{{-3}}', '-3'],
    ['{{- range .items }}\n  {{- .metadata.name }}\n{{ end -}}\n\n', 'web-1\ndb-1\n'],
    ['a{{/* a comment */}}b', 'ab'],
    ['a {{- /* trimmed on both sides */ -}}\n b', 'ab'],
    ['{{/* a comment\nover lines */}}x', 'x'],
    ['no actions at all', 'no actions at all'],
    ['{{\n  .x\n}}', '2'],
  ])('%j prints %j', (template, expected) => {
    expect(run(template)).toBe(expected);
  });
});

describe("Go's printing of values", () => {
  it.each([
    ['{{.metadata.missing}}', '<no value>', ENTRY],
    ['{{.metadata.missing.deeper}}', '<no value>', ENTRY],
    ['{{.nothing}}', '<no value>', DATA],
    ['{{print .nothing}} {{printf "%v" .metadata}}', '<nil> <nil>', DATA],
    ['{{print nil}}', '<nil>', DATA],
    ['{{.metadata.labels}}', 'map[app:web version:v1]', ENTRY],
    ['{{.m}}', 'map[a:1 b:2 c:3]', DATA],
    ['{{.tags}} {{.empty}} {{.withNull}}', '[a b] [] [1 <nil>]', DATA],
    ['{{.spec.ports.http}} {{.spec.weight}}', '8080 1.5', ENTRY],
    ['{{.big}}', '1.2345675e+06', DATA],
    ['{{true}} {{false}} {{"s"}}', 'true false s', DATA],
    [String.raw`{{"tab\there \u00e9 \x41\\"}}`, 'tab\there é A\\', DATA],
    ['{{`raw\\n`}}', 'raw\\n', DATA],
    [
      "{{'a'}} {{0x1F}} {{0o17}} {{017}} {{1_000}} {{1e3}} {{-2.5}}",
      '97 31 15 15 1000 1000 -2.5',
      DATA,
    ],
  ])('%s prints %j', (template, expected, data) => {
    expect(run(template, data)).toBe(expected);
  });
});

describe('control structures and variables', () => {
  it.each([
    ['{{if eq .x 1}}one{{else if eq .x 2}}two{{else}}many{{end}}', 'two'],
    ['{{if .empty}}yes{{else if .nothing}}no{{end}}', ''],
    ['{{with .items}}{{len .}}{{end}} {{with .missing}}x{{else}}none{{end}}', '2 none'],
    ['{{with $n := .x}}{{$n}}{{end}}', '2'],
    ['{{with .missing}}a{{else with .x}}b{{.}}{{end}}', 'b2'],
    [
      '{{range .missing}}x{{else}}empty{{end}} {{range .empty}}x{{else}}empty{{end}}',
      'empty empty',
    ],
    ['{{range $k, $v := .m}}{{$k}}={{$v}},{{end}}', 'a=1,b=2,c=3,'],
    ['{{range $v := .m}}{{$v}}{{end}} {{range .m}}{{.}}{{end}}', '123 123'],
    ['{{range $i, $t := .tags}}{{$i}}{{$t}}{{end}}', '0a1b'],
    ['{{range 3}}{{.}}{{end}}', '012'],
    [
      '{{range .nums}}{{if eq . 3}}{{break}}{{end}}{{if eq . 1}}{{continue}}{{end}}{{.}}{{end}}',
      '02',
    ],
    ['{{$n := len .items}}{{$n}} {{$n = 5}}{{$n}}', '2 5'],
    ['{{$last := ""}}{{range .items}}{{$last = .metadata.name}}{{end}}{{$last}}', 'db-1'],
    ['{{$x := 1}}{{if true}}{{$x := 2}}{{$x}}{{end}}{{$x}}', '21'],
    ['{{$ := .x}}', ''],
    ['{{range $t := ($all := .tags)}}{{$t}}{{len $all}}{{end}}', 'a2b2'],
    ['{{$i := 9}}{{range $i, $t := .tags}}{{end}}{{$i}}', '9'],
    ['{{$t := ""}}{{range $i, $t = .tags}}{{end}}{{$t}}', 'b'],
  ])('%s prints %j', (template, expected) => {
    expect(run(template)).toBe(expected);
  });
});

describe('pipelines and functions', () => {
  it.each([
    ['{{.kind | printf "%s!"}}', 'List!'],
    ['{{"x" | printf "%s-%s" "a"}}', 'a-x'],
    ['{{printf "%d items" (len .items)}}', '2 items'],
    ['{{(index .items 1).metadata.name}} {{index .items 1 "metadata" "name"}}', 'db-1 db-1'],
    ['{{index .tags 1}} {{index .m "b"}} {{index .m "zz"}} {{index "abc" 0}}', 'b 2 <no value> 97'],
    ['{{and 1 0 "x"}} {{and 1 "x"}} {{or "" 0 "y"}} {{or "" 0}}', '0 x y 0'],
    ['{{or 1 (index .items 9)}} {{and 0 (index .items 9)}}', '1 0'],
    ['{{not .empty}} {{not .x}}', 'true false'],
    [
      '{{eq .x 3 2}} {{eq .x 3}} {{eq .missing "a"}} {{eq .missing nil}} {{ne "a" "b"}}',
      'true false false true true',
    ],
    [
      '{{lt 1 2}} {{le 2 2}} {{gt "b" "a"}} {{ge 2.5 1.5}} {{lt "B" "a"}}',
      'true true true true true',
    ],
    ['{{len "héllo"}} {{len .m}} {{len .tags}}', '6 3 2'],
    [
      '{{slice "abcdef" 1 3}} {{slice .nums 3}} {{slice .nums 1 2}} {{slice .nums}}',
      'bc [3 4] [1] [0 1 2 3 4]',
    ],
    ['{{print "a" 1 2 "b"}}|{{println "a" 1}}|', 'a1 2b|a 1\n|'],
    ['{{"aGVsbG8=" | base64decode}}', 'hello'],
  ])('%s prints %j', (template, expected) => {
    expect(run(template)).toBe(expected);
  });
});

describe('printf', () => {
  it.each([
    ['%-10s|%10s|', ['web', 'web'], 'web       |       web|'],
    ['%5d|%-5d|%05d|%+d|% d', [42, 42, 42, 5, 5], '   42|42   |00042|+5| 5'],
    ['%x %X %#x %o %b %c %U', [255, 255, 255, 8, 5, 233, 233], 'ff FF 0xff 10 101 é U+00E9'],
    [
      '%f %.2f %8.3f| %.0f %.0f %.1f',
      [1.23456, 1.23456, 1.23456, 2.5, 3.5, 0.25],
      '1.234560 1.23    1.235| 2 4 0.2',
    ],
    [
      '%e %g %.3g %v %v %g',
      [123456.789, 100000000.5, 1.23456, 0.00001, 1e21, 0],
      '1.234568e+05 1.000000005e+08 1.23 1e-05 1e+21 0',
    ],
    [
      '%q %v %s %t %% %x',
      ['a"b\n', { b: 2, a: 1 }, ['x', 'y'], true, 'hi'],
      '"a\\"b\\n" map[a:1 b:2] [x y] true % 6869',
    ],
    ['%.2s|%*d|%-*d|', ['hello', 5, 42, 4, 7], 'he|   42|7   |'],
    ['%d %s %d %t', ['web', 5, 1.5, 1], '%!d(string=web) %!s(int=5) %!d(float64=1.5) %!t(int=1)'],
    ['%s %s', ['a'], 'a %!s(MISSING)'],
    ['%s', ['a', 'b', 3], 'a%!(EXTRA string=b, int=3)'],
    ['%d|%v', [null, null], '%!d(<nil>)|<nil>'],
    ['50%', [], '50%!(NOVERB)'],
  ])('printf %j %j prints %j', (format, args, expected) => {
    const literal = (value: unknown) => JSON.stringify(value);
    // Arguments travel as data: the template indexes them out of a list.
    const template = `{{printf ${literal(format)}${args.map((_, i) => ` (index .args ${i})`).join('')}}}`;
    expect(run(template, { args })).toBe(expected);
  });
});

describe('parse errors name the line and column', () => {
  it.each([
    ['{{.metadata.name}', "template: output:1:17: bad character U+007D '}'"],
    ['{{range .items}}\n{{.metadata.name}}\n', 'template: output:3:1: unexpected EOF'],
    ['{{if}}x{{end}}', 'template: output:1:5: missing value for if'],
    ['{{foo .x}}', 'template: output:1:3: function "foo" not defined'],
    ['x\n  {{$y}}', 'template: output:2:5: undefined variable "$y"'],
    ['{{$y = 1}}', 'template: output:1:3: undefined variable "$y"'],
    ['{{end}}', 'template: output:1:3: unexpected {{end}}'],
    ['{{else}}', 'template: output:1:3: unexpected {{else}}'],
    ['{{range .items}}{{else if .x}}{{end}}', 'cannot end a {{range}}'],
    ['{{.a | 3}}', 'non executable command in pipeline stage 2'],
    ['{{break}}', '{{break}} outside {{range}}'],
    ['{{template "x"}}', '{{template}} is not supported'],
    ['{{"open}}', 'unterminated quoted string'],
    ['{{`open}}', 'unterminated raw quoted string'],
    ['{{/* open', 'unclosed comment'],
    ['{{/* c */ }}', 'comment ends before closing delimiter'],
    ['{{.a}}{{.b', 'unclosed action'],
    ['{{(.a}}', 'unclosed left paren'],
    ['{{.a)}}', 'unexpected right paren'],
    ['{{$x, $y := 2}}', 'too many declarations in command'],
    ['{{08}}', 'illegal number syntax: "08"'],
    ['{{1x}}', 'bad number syntax: "1x"'],
    ['{{"\\q"}}', "invalid escape '\\q'"],
    ['{{.a b}}', 'function "b" not defined'],
    ['{{"a".b}}', 'unexpected . after term "\\"a\\""'],
    ['{{.a ,}}', 'unexpected "," in operand'],
    ['{{#}}', "unrecognized character in action: U+0023 '#'"],
  ])('refuses %j: %s', (template, message) => {
    const error = (() => {
      try {
        compileGoTemplate(template);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(isGoTemplateError(error) && error.phase).toBe('parse');
    expect((error as Error).message).toContain(message);
  });
});

describe('errors while running name where, as Go does', () => {
  it.each([
    [
      '{{.metadata.name.first}}',
      'template: output:1:3: executing "output" at <.metadata.name.first>: can\'t evaluate field first in type string',
    ],
    [
      'names:\n  {{len .metadata.missing}}',
      'template: output:2:5: executing "output" at <len .metadata.missin...>: error calling len: len of nil pointer',
    ],
    ['{{index .metadata.nolabels "app"}}', 'error calling index: index of untyped nil'],
    ['{{index .spec.ports "http" 0}}', "error calling index: can't index item of type int"],
    ['{{index (slice "abc" 0 1) 4}}', 'error calling index: index out of range: 4'],
    ['{{range .metadata.name}}{{end}}', "range can't iterate over web-1"],
    ['{{.metadata.labels.app 1}}', 'app is not a method but has arguments'],
    ['{{lt .metadata.name 1}}', 'error calling lt: incompatible types for comparison'],
    ['{{eq .metadata .metadata}}', 'error calling eq: non-comparable type'],
    ['{{printf 1}}', 'at <printf>: wrong type for value; expected string; got int'],
    ['{{len}}', 'wrong number of args for len: want 1 got 0'],
    ['{{"x" | base64decode}}', 'base64 decode failed: illegal base64 data at input byte 0'],
    ['{{nil}}', 'nil is not a command'],
    ['{{.status.conditions.x}}', "can't evaluate field x in type []interface {}"],
    ['{{.metadata.name 2}}', 'name is not a method but has arguments'],
    ['{{"a" 2}}', 'can\'t give argument to non-function "a"'],
  ])('%j fails: %s', (template, message) => {
    const template_ = compileGoTemplate(template);
    const error = (() => {
      try {
        template_.execute(ENTRY);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(isGoTemplateError(error) && error.phase).toBe('exec');
    expect((error as Error).message).toContain(message);
    expect((error as Error).message).toMatch(
      /^error executing template: template: output:\d+:\d+: /,
    );
  });

  it('says a field of nil is a nil pointer, and a field of no value is no value', () => {
    expect(() => run('{{.nothing.x}}')).toThrow('nil pointer evaluating interface {}.x');
    expect(run('{{$n := .nothing}}{{$n.x}}')).toBe('<no value>');
  });
});

describe('data', () => {
  it('is read as JSON carries it: no undefined fields, dates as text', () => {
    const data = { at: new Date('2026-03-01T12:00:00Z'), gone: undefined };
    expect(run('{{.at}} {{.gone}} {{len .}}', data)).toBe('2026-03-01T12:00:00.000Z <no value> 1');
  });
});
