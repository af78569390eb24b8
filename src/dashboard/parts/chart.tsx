// A time series chart (uPlot: small, fast on long series). Days are UTC and labelled so.
// Each series can be shown or hidden from its legend; the exact values are in the legend
// as the pointer moves, and the same figures are in a table for screen readers.

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { compact, full } from "../format.ts";

export interface Series {
  label: string;
  values: number[];
  color: string;
}

export function TimeChart({ days, series, title }: { days: string[]; series: Series[]; title: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      scales: { x: { time: true } },
      axes: [
        {
          stroke: "currentColor",
          grid: { stroke: "rgba(128,128,128,.15)" },
          // Whole days only: the points are UTC days, never hours.
          incrs: [86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 365 * 86400],
          values: (_u, ticks) =>
            ticks.map((t) => new Date(t * 1000).toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" })),
        },
        { stroke: "currentColor", grid: { stroke: "rgba(128,128,128,.15)" }, values: (_u, v) => v.map((x) => compact(x)) },
      ],
      series: [
        { label: "Day (UTC)", value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          points: { show: days.length < 60 },
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
  }, [days.join(), series.map((s) => s.label + s.values.join()).join("|")]);
  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={title} />
      <div class="sr-only">
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              <th>Day (UTC)</th>
              {series.map((s) => (
                <th key={s.label}>{s.label}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {days.map((d, i) => (
              <tr key={d}>
                <td>{d}</td>
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
