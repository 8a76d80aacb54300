import { describe, expect, it } from 'vitest';
import { EVENTS_KEPT, healthEvent, templateRolledOutEvent } from '../../lib/domain/entry-events.ts';
import {
  eventCountAfter,
  trimUpdate,
  withEntryEvent,
} from '../../lib/store/dynamodb-entry-events.ts';
import { decodeEvents, encodeEvent } from '../../lib/store/event-codec.ts';

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);

describe('withEntryEvent: an event rides on a write that happens anyway', () => {
  it('joins the SET clause of the write, keeping its condition and values', () => {
    const event = templateRolledOutEvent(T0, 'web', 2, 3, ['labels']);
    const input = withEntryEvent(
      {
        TableName: 't',
        Key: { pk: 'NS#shop', sk: 'WE#web-10.0.0.1' },
        UpdateExpression: 'SET #entry.#meta.labels = :labels REMOVE x ADD revision :one',
        ConditionExpression: 'groupGeneration = :from',
        ExpressionAttributeNames: { '#entry': 'entry', '#meta': 'metadata' },
        ExpressionAttributeValues: { ':labels': { app: 'web' }, ':one': 1, ':from': 2 },
      },
      event,
    );
    expect(input).toEqual({
      TableName: 't',
      Key: { pk: 'NS#shop', sk: 'WE#web-10.0.0.1' },
      UpdateExpression:
        'SET #evList = list_append(if_not_exists(#evList, :evNone), :evNew), ' +
        'eventsSince = if_not_exists(eventsSince, :evAt), ' +
        '#entry.#meta.labels = :labels REMOVE x ADD revision :one',
      ConditionExpression: 'groupGeneration = :from',
      ExpressionAttributeNames: { '#entry': 'entry', '#meta': 'metadata', '#evList': 'events' },
      ExpressionAttributeValues: {
        ':labels': { app: 'web' },
        ':one': 1,
        ':from': 2,
        ':evNone': [],
        ':evNew': [
          {
            t: T0,
            r: 'TemplateUpdated',
            m: 'WorkloadGroup web generation 2 -> 3 applied to the live entry (labels)',
          },
        ],
        ':evAt': T0,
      },
    });
  });

  it('adds a SET clause to a write that has none', () => {
    const input = withEntryEvent(
      { TableName: 't', Key: { pk: 'a', sk: 'b' }, UpdateExpression: 'REMOVE x DELETE conns :set' },
      healthEvent(T0, true),
    );
    // `:set` is a placeholder, not the keyword.
    expect(input.UpdateExpression).toBe(
      'SET #evList = list_append(if_not_exists(#evList, :evNone), :evNew), ' +
        'eventsSince = if_not_exists(eventsSince, :evAt) REMOVE x DELETE conns :set',
    );
  });

  it('stores an event in a few short attributes and reads it back whole', () => {
    const event = healthEvent(T0, false, 'down');
    expect(encodeEvent(event)).toEqual({
      t: T0,
      r: 'Unhealthy',
      m: 'Healthy turned False: down',
      w: true,
    });
    expect(decodeEvents([encodeEvent(event), { bogus: 1 }])).toEqual([event]);
  });
});

describe('trimming the list', () => {
  it('removes the oldest down to the kept number, highest index first, only at the length seen', () => {
    expect(trimUpdate('t', { namespace: 'shop', name: 'web' }, EVENTS_KEPT + 3)).toEqual({
      TableName: 't',
      Key: { pk: 'NS#shop', sk: 'WE#web' },
      UpdateExpression: 'REMOVE #evList[2], #evList[1], #evList[0]',
      ConditionExpression: 'size(#evList) = :length',
      ExpressionAttributeNames: { '#evList': 'events' },
      ExpressionAttributeValues: { ':length': EVENTS_KEPT + 3 },
    });
  });

  it('counts the list after a write from its old or new values', () => {
    expect(eventCountAfter({ events: [1, 2, 3] }, 'old')).toBe(4);
    expect(eventCountAfter({ events: [1, 2, 3] }, 'new')).toBe(3);
    expect(eventCountAfter(undefined, 'new')).toBeUndefined();
  });
});
