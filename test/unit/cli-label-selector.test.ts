import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { matchesSelector, parseLabelSelector } from '../../cli/label-selector.ts';

describe('label selectors (-l)', () => {
  const labels = { app: 'web', tier: 'front', 'example.com/team': 'shop' };

  it.each([
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['app!=web', false],
    ['missing!=x', true],
    ['tier', true],
    ['missing', false],
    ['!missing', true],
    ['!tier', false],
    ['app=web,tier=front', true],
    ['app=web,tier=back', false],
    [' app = web , example.com/team=shop ', true],
    ['app=', false],
  ])('%j matches app=web,tier=front,example.com/team=shop: %s', (selector, expected) => {
    expect(matchesSelector(parseLabelSelector(selector), labels)).toBe(expected);
  });

  it('matches only absence and inequality on an object without labels', () => {
    expect(matchesSelector(parseLabelSelector('!app,app!=web'), undefined)).toBe(true);
    expect(matchesSelector(parseLabelSelector('app'), undefined)).toBe(false);
  });

  it.each([
    ['app in (web,db)', 'set-based requirements (in, notin) are not supported'],
    ['tier notin (canary)', 'set-based requirements (in, notin) are not supported'],
    ['replicas>1', "'<' and '>' are not supported"],
    ['app=web,', 'empty requirement'],
    ['bad key=1', "invalid label key 'bad key'"],
    ['app=-web', "invalid label value '-web'"],
  ])('refuses %j naming the problem', (selector, message) => {
    expect(() => parseLabelSelector(selector)).toThrow(InvalidArgumentError);
    expect(() => parseLabelSelector(selector)).toThrow(message);
  });
});
