import { describe, expect, it } from 'vitest';
import { MessageBudget } from '../../lib/domain/message-budget.ts';

describe('MessageBudget', () => {
  it('admits a connection up to its budget in a window, then refuses the rest of that window', () => {
    const budget = new MessageBudget({ messages: 3, windowMs: 1_000, maxTracked: 10 });
    const answers = [0, 100, 200, 300, 999].map((at) => budget.admit('flood', at));
    expect(answers).toEqual(['admitted', 'admitted', 'admitted', 'exceeded', 'over']);
    // A new window starts afresh.
    expect(budget.admit('flood', 1_000)).toBe('admitted');
  });

  it("never lets one connection's flood use another connection's budget", () => {
    const budget = new MessageBudget({ messages: 2, windowMs: 1_000, maxTracked: 10 });
    for (let i = 0; i < 50; i++) budget.admit('evil', i);
    expect(budget.admit('shop', 60)).toBe('admitted');
    expect(budget.admit('shop', 61)).toBe('admitted');
    expect(budget.admit('evil', 62)).toBe('over');
  });

  it('admits a live agent at a hundred times its normal pace', () => {
    const budget = new MessageBudget();
    // Ten messages a second for a minute: a hundred times what an agent sends.
    const refused = Array.from({ length: 600 }, (_, i) => budget.admit('agent', i * 100)).filter(
      (answer) => answer !== 'admitted',
    );
    expect(refused).toEqual([]);
  });

  it('remembers at most maxTracked connections, forgetting the oldest windows first', () => {
    const budget = new MessageBudget({ messages: 1, windowMs: 60_000, maxTracked: 3 });
    for (const id of ['a', 'b', 'c', 'd']) budget.admit(id, 0);
    expect(budget.tracked).toBe(3);
    // 'a' was forgotten: its next message starts a new window; 'd' is still over.
    expect(budget.admit('a', 1)).toBe('admitted');
    expect(budget.admit('d', 1)).toBe('exceeded');
  });

  it('starts a new window when the clock goes back', () => {
    const budget = new MessageBudget({ messages: 1, windowMs: 1_000, maxTracked: 10 });
    expect(budget.admit('c', 5_000)).toBe('admitted');
    expect(budget.admit('c', 4_000)).toBe('admitted');
  });
});
