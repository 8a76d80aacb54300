/**
 * How fast a heap grows, from readings taken after a full GC at several points of a run: the
 * Theil-Sen estimator (the median of the slopes between every two readings). One reading
 * caught high or low (a lazily compiled function, a pool that grew once, a buffer the GC had
 * not yet returned) moves it little, where a least-squares line or the last reading minus the
 * first would follow it; a steady growth moves every pairwise slope, so it shows whole.
 */
export interface HeapPoint {
  /** Invocations so far. */
  invocations: number;
  /** Bytes in use after a full GC. */
  bytes: number;
}

/** Bytes per 1,000 invocations; 0 with fewer than two readings. */
export function heapSlopePer1000(points: readonly HeapPoint[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const a = points[i];
      const b = points[j];
      if (!a || !b || b.invocations === a.invocations) continue;
      slopes.push(((b.bytes - a.bytes) / (b.invocations - a.invocations)) * 1000);
    }
  }
  if (slopes.length === 0) return 0;
  slopes.sort((x, y) => x - y);
  const middle = slopes.length / 2;
  return Number.isInteger(middle)
    ? ((slopes[middle - 1] ?? 0) + (slopes[middle] ?? 0)) / 2
    : (slopes[Math.floor(middle)] ?? 0);
}

/**
 * The growth that lasts: the smaller of the slopes over the first and the second half of the
 * readings (they share the middle one). A leak keeps growing, so it shows in both halves; a
 * step (a cache whose first expiry runs a path for the first time, a pool that grew once)
 * lands in one half only, and Theil-Sen over all the readings would read it as a slope when
 * it falls in the middle of a short run (CI's DynamoDB Local run: `$connect` stepped 21 KB
 * once between its 280th and 320th invocation, 96 KB per 1,000 over all, 0.6 KB after).
 */
export function sustainedHeapSlopePer1000(points: readonly HeapPoint[]): number {
  if (points.length < 4) return heapSlopePer1000(points);
  const middle = Math.floor(points.length / 2);
  return Math.min(
    heapSlopePer1000(points.slice(0, middle + 1)),
    heapSlopePer1000(points.slice(middle)),
  );
}
