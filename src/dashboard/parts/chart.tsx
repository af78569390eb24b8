// A time series chart (uPlot: small, fast on long series). The points are the API's
// buckets (hours, days, weeks or months, local to the app's time zone), drawn one apart in
// order, so a day of 23 or 25 hours or a month of 28 days changes nothing; the axis is
// labelled by the interval (14:00, 24 Nov, Week of 24 Nov, Nov 2026). Each series can be
// shown or hidden from its legend; the exact values are in the legend as the pointer
// moves, and the same figures are in a table for screen readers (and tests).

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { compact, DAY_MS, full, INTERVALS, msOf, pointFull, pointLabel, type Interval } from "../format.ts";

export interface Series {
  label: string;
  values: number[];
  color: string;
}

/** Hours between ticks an hourly axis may use. */
const HOUR_STEPS = [1, 2, 3, 6, 12, 24];

/** Room one axis label takes, in CSS pixels. */
const LABEL_PX = { hour: 56, day: 64, week: 110, month: 76 } as const;

export function TimeChart({
  points,
  series,
  title,
  interval = "day",
  zone = "UTC",
}: {
  /** Each point's `date` as the API gives it (YYYY-MM-DD, or a local hour with offset). */
  points: string[];
  series: Series[];
  title: string;
  interval?: Interval;
  zone?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const manyDays = interval === "hour" && new Set(points.map((p) => p.slice(0, 10))).size > 1;
  const labels = points.map((p) => pointLabel(p, interval, manyDays));
  const fulls = points.map((p) => pointFull(p, interval));
  const noun = INTERVALS.find((i) => i.id === interval)!.noun;
  const xTitle = `${noun[0]!.toUpperCase()}${noun.slice(1)} (${zone})`;
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = points.map((_, i) => i);
    const room = manyDays ? LABEL_PX.hour + 48 : LABEL_PX[interval];
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 240,
      // Half a point of room at each end of a short series, so its first and last labels fit.
      scales: {
        x: {
          time: false,
          range: (_u, min, max) => (min === max ? [min - 1, max + 1] : xs.length <= 60 ? [min - 0.5, max + 0.5] : [min, max]),
        },
      },
      axes: [
        {
          stroke: "currentColor",
          grid: { stroke: "rgba(128,128,128,.15)" },
          // Ticks on points only, as many as fit; hours on round ones (00:00, 06:00…).
          splits: (u) => {
            const fit = Math.max(2, Math.floor((u.width || el.clientWidth) / room));
            const step = Math.max(1, Math.ceil(xs.length / fit));
            if (interval !== "hour") return xs.filter((i) => i % step === 0);
            const every = HOUR_STEPS.find((h) => h >= step) ?? 24 * Math.ceil(step / 24);
            const round = xs.filter((i) => {
              const h = Number(points[i]!.slice(11, 13));
              return every <= 24 ? h % every === 0 : h === 0 && Math.round(msOf(points[i]!.slice(0, 10)) / DAY_MS) % (every / 24) === 0;
            });
            return round.length ? round : [0];
          },
          values: (_u, ticks) => ticks.map((t) => labels[t] ?? ""),
        },
        { stroke: "currentColor", grid: { stroke: "rgba(128,128,128,.15)" }, values: (_u, v) => v.map((x) => compact(x)) },
      ],
      series: [
        { label: xTitle, value: (_u, v) => (v == null ? "" : (fulls[v] ?? "")) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          points: { show: points.length < 60 },
          value: (_u: uPlot, v: number | null) => (v == null ? "" : full(v)),
        })),
      ],
    };
    const plot = new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 240 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [interval, zone, points.join(), series.map((s) => s.label + s.values.join()).join("|")]);
  return (
    <figure class="chart" data-interval={interval} data-points={points.length}>
      <div ref={box} role="img" aria-label={title} />
      <div class="sr-only">
        <table class="chart-points">
          <caption>{title}</caption>
          <thead>
            <tr>
              <th>{xTitle}</th>
              {series.map((s) => (
                <th key={s.label}>{s.label}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {points.map((d, i) => (
              <tr key={d} data-date={d} data-label={labels[i]}>
                <td>{fulls[i]}</td>
                {series.map((s) => (
                  <td key={s.label}>{s.values[i]}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
