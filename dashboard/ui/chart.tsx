import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { COUNT_INCREMENTS, count, hourMinute } from './format.ts';

/**
 * A time series chart drawn by uPlot: this component only hands it the data and its width.
 * Each chart sits in a <figure> whose caption and table (the caller's) say the same in text,
 * for a screen reader and for exact numbers.
 */
export interface ChartSeries {
  label: string;
  /** A colour from the page's palette (CSS custom properties do not reach the canvas). */
  color: string;
  values: (number | null)[];
  /** Points only (an event, such as a run that stopped early), no line. */
  pointsOnly?: boolean;
  dash?: number[];
}

export interface ChartProps {
  /** Seconds since the epoch (uPlot's time axis). */
  times: number[];
  series: ChartSeries[];
  height?: number;
  /** What the chart shows, for assistive technology. */
  label: string;
  /** The time axis's span in seconds (the window shown), whatever the data covers. */
  span: [number, number];
}

export function TimeChart({ times, series, height = 200, label, span }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const spanRef = useRef(span);
  spanRef.current = span;

  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const options: uPlot.Options = {
      width: Math.max(240, element.clientWidth),
      height,
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true, range: () => spanRef.current },
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
      },
      axes: [
        {
          stroke: '#6b7280',
          grid: { stroke: '#e5e7eb' },
          // UTC, as every other time on the page (format.ts), not the browser's "9:05pm".
          values: (_u, splits) => splits.map(hourMinute),
        },
        {
          stroke: '#6b7280',
          grid: { stroke: '#e5e7eb' },
          // Counts: ticks on whole numbers only.
          incrs: COUNT_INCREMENTS,
          values: (_u, splits) => splits.map((value) => count(value)),
        },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          ...(s.dash ? { dash: s.dash } : {}),
          ...(s.pointsOnly
            ? { paths: () => null, points: { show: true, size: 9, fill: s.color } }
            : {}),
        })),
      ],
    };
    const chart = new uPlot(options, [times, ...series.map((s) => s.values)], element);
    plot.current = chart;
    const resize = new ResizeObserver(() => {
      chart.setSize({ width: Math.max(240, element.clientWidth), height });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
    // A new set of series builds a new chart; new values of the same series only update it.
  }, [series.map((s) => s.label).join('|'), height]);

  useEffect(() => {
    plot.current?.setData([times, ...series.map((s) => s.values)]);
  }, [times, series]);

  return <div class="chart" ref={box} role="img" aria-label={label} />;
}
