// A uPlot chart of amounts per day: the first series as bars, the others as lines with points.
// Sized to its container (phone to desktop) and drawn in the theme's colours.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { dayText } from './format';

export interface ChartSeries { label: string; values: number[] }

export const PALETTE = ['#1f6feb', '#d9480f', '#2f9e44', '#ae3ec9', '#e8590c', '#0c8599', '#c2255c', '#5c940d', '#845ef7', '#f08c00'];

/** tick spacing of the day axis: whole days only */
const DAY_INCREMENTS = [1, 2, 7, 14, 30, 91, 365].map((days) => days * 86_400);

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/** `days` are local midnights, or UTC midnights with `utc` (the admin API counts days in UTC). */
export function DayChart({ days, series, label, format, utc = false }: { days: number[]; series: ChartSeries[]; label: string; format: (value: number) => string; utc?: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current!;
    const text = cssVar('--fg', '#222');
    const grid = cssVar('--line', '#ddd');
    const width = () => Math.max(280, element.clientWidth);
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const options: uPlot.Options = {
      width: width(), height: 260,
      // half a day of room each side, so the first and last bars are drawn whole
      scales: { x: { time: true, range: (_plot, min, max) => [min - 43_200, max + 43_200] }, y: { range: (_plot, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { ...axis, incrs: DAY_INCREMENTS, values: (_plot, ticks) => ticks.map((tick) => dayText(tick, true, utc)) },
        { ...axis, size: 70, values: (_plot, ticks) => ticks.map(format) },
      ],
      series: [
        { label: utc ? 'Day (UTC)' : 'Day', value: (_plot, value) => value === null ? '' : dayText(value, false, utc) },
        ...series.map((entry, index) => ({
          label: entry.label,
          stroke: PALETTE[index % PALETTE.length],
          fill: index === 0 ? `${PALETTE[0]}55` : undefined,
          width: index === 0 ? 1 : 2,
          // the total as bars, each model as a point per day (lines between days would suggest spend in between)
          paths: index === 0 ? uPlot.paths.bars!({ size: [0.6, 48] }) : () => null,
          points: { show: index > 0, size: 8, fill: PALETTE[index % PALETTE.length] },
          value: (_plot: uPlot, value: number | null) => value === null ? '' : format(value),
        })),
      ],
      legend: { live: true },
      ...(utc ? { tzDate: (seconds: number) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC') } : {}),
    };
    const plot = new uPlot(options, [days, ...series.map((entry) => entry.values)], element);
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: 260 }));
    observer.observe(element);
    return () => { observer.disconnect(); plot.destroy(); };
  }, [days, series, format, utc]);
  return <div class="chart" ref={box} role="img" aria-label={label} />;
}
