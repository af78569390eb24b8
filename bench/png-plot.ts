// Line charts as PNG files with no plotting dependency: stacked panels sharing one time
// axis, with gridlines, tick marks and labels drawn in a small hand-made bitmap font.
// Bench scripts use it to leave a picture next to their CSV in bench/results/.

import { writeFileSync } from "node:fs";
import { PNG } from "pngjs";

export type Rgb = readonly [number, number, number];

export interface Series {
  label: string;
  color: Rgb;
  /** [x, y] pairs; NaN y values leave a gap. */
  points: readonly (readonly [number, number])[];
  dashed?: boolean;
}

export interface Panel {
  title: string;
  series: Series[];
}

export interface Chart {
  width: number;
  height: number;
  xLabel: string;
  panels: Panel[];
}

// 5×7 glyphs, one string of 0/1 per row. Upper case only: labels are upper-cased.
const GLYPHS: Record<string, string> = {
  "0": "01110 10001 10011 10101 11001 10001 01110",
  "1": "00100 01100 00100 00100 00100 00100 01110",
  "2": "01110 10001 00001 00010 00100 01000 11111",
  "3": "11111 00010 00100 00010 00001 10001 01110",
  "4": "00010 00110 01010 10010 11111 00010 00010",
  "5": "11111 10000 11110 00001 00001 10001 01110",
  "6": "00110 01000 10000 11110 10001 10001 01110",
  "7": "11111 00001 00010 00100 01000 01000 01000",
  "8": "01110 10001 10001 01110 10001 10001 01110",
  "9": "01110 10001 10001 01111 00001 00010 01100",
  ".": "00000 00000 00000 00000 00000 01100 01100",
  ",": "00000 00000 00000 00000 01100 00100 01000",
  ":": "00000 01100 01100 00000 01100 01100 00000",
  "-": "00000 00000 00000 11111 00000 00000 00000",
  "+": "00000 00100 00100 11111 00100 00100 00000",
  "=": "00000 00000 11111 00000 11111 00000 00000",
  "/": "00000 00001 00010 00100 01000 10000 00000",
  "(": "00010 00100 01000 01000 01000 00100 00010",
  ")": "01000 00100 00010 00010 00010 00100 01000",
  "%": "11001 11010 00010 00100 01000 01011 10011",
  A: "01110 10001 10001 11111 10001 10001 10001",
  B: "11110 10001 10001 11110 10001 10001 11110",
  C: "01110 10001 10000 10000 10000 10001 01110",
  D: "11100 10010 10001 10001 10001 10010 11100",
  E: "11111 10000 10000 11110 10000 10000 11111",
  F: "11111 10000 10000 11110 10000 10000 10000",
  G: "01110 10001 10000 10111 10001 10001 01111",
  H: "10001 10001 10001 11111 10001 10001 10001",
  I: "01110 00100 00100 00100 00100 00100 01110",
  J: "00111 00010 00010 00010 00010 10010 01100",
  K: "10001 10010 10100 11000 10100 10010 10001",
  L: "10000 10000 10000 10000 10000 10000 11111",
  M: "10001 11011 10101 10101 10001 10001 10001",
  N: "10001 10001 11001 10101 10011 10001 10001",
  O: "01110 10001 10001 10001 10001 10001 01110",
  P: "11110 10001 10001 11110 10000 10000 10000",
  Q: "01110 10001 10001 10001 10101 10010 01101",
  R: "11110 10001 10001 11110 10100 10010 10001",
  S: "01111 10000 10000 01110 00001 00001 11110",
  T: "11111 00100 00100 00100 00100 00100 00100",
  U: "10001 10001 10001 10001 10001 10001 01110",
  V: "10001 10001 10001 10001 10001 01010 00100",
  W: "10001 10001 10001 10101 10101 10101 01010",
  X: "10001 10001 01010 00100 01010 10001 10001",
  Y: "10001 10001 01010 00100 00100 00100 00100",
  Z: "11111 00001 00010 00100 01000 10000 11111",
};

const SCALE = 2;
const CHAR_W = 6 * SCALE;
const CHAR_H = 7 * SCALE;

export const textWidth = (s: string) => s.length * CHAR_W - SCALE;

class Canvas {
  readonly png: PNG;
  constructor(
    readonly w: number,
    readonly h: number,
  ) {
    this.png = new PNG({ width: w, height: h });
    this.png.data.fill(255);
  }

  set(x: number, y: number, c: Rgb) {
    x = Math.round(x);
    y = Math.round(y);
    if (x < 0 || y < 0 || x >= this.w || y >= this.h) return;
    const i = (y * this.w + x) * 4;
    this.png.data[i] = c[0];
    this.png.data[i + 1] = c[1];
    this.png.data[i + 2] = c[2];
    this.png.data[i + 3] = 255;
  }

  rect(x: number, y: number, w: number, h: number, c: Rgb) {
    for (let j = 0; j < h; j++) for (let i = 0; i < w; i++) this.set(x + i, y + j, c);
  }

  /** Bresenham, `thick` pixels wide; `dash` > 0 draws dashes of that many pixels. */
  line(x0: number, y0: number, x1: number, y1: number, c: Rgb, thick = 1, dash = 0) {
    x0 = Math.round(x0);
    y0 = Math.round(y0);
    x1 = Math.round(x1);
    y1 = Math.round(y1);
    const dx = Math.abs(x1 - x0);
    const dy = -Math.abs(y1 - y0);
    const sx = x0 < x1 ? 1 : -1;
    const sy = y0 < y1 ? 1 : -1;
    let err = dx + dy;
    for (let n = 0; ; n++) {
      if (!dash || Math.floor(n / dash) % 2 === 0)
        this.rect(x0 - Math.floor((thick - 1) / 2), y0 - Math.floor((thick - 1) / 2), thick, thick, c);
      if (x0 === x1 && y0 === y1) break;
      const e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }

  text(x: number, y: number, s: string, c: Rgb) {
    let cx = Math.round(x);
    for (const ch of s.toUpperCase()) {
      const g = GLYPHS[ch];
      if (g) {
        const rows = g.split(" ");
        for (let r = 0; r < 7; r++)
          for (let col = 0; col < 5; col++) if (rows[r]![col] === "1") this.rect(cx + col * SCALE, y + r * SCALE, SCALE, SCALE, c);
      }
      cx += CHAR_W;
    }
  }
}

/** Tick step of 1, 2 or 5 × 10^k giving about `want` intervals up to `max`. */
export function niceStep(max: number, want = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / want;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

const fmtTick = (v: number, step: number) => (step >= 1 ? String(Math.round(v)) : v.toFixed(Math.min(3, Math.ceil(-Math.log10(step)))));

const INK: Rgb = [40, 40, 40];
const GRID: Rgb = [225, 225, 225];
const AXIS: Rgb = [120, 120, 120];

export function renderChart(chart: Chart): PNG {
  const cv = new Canvas(chart.width, chart.height);
  const left = 80;
  const right = 24;
  const bottomAxis = 52;
  const panelGap = 24;
  const titleH = 30;
  let xMax = 0;
  for (const p of chart.panels) for (const s of p.series) for (const [x] of s.points) if (x > xMax) xMax = x;
  const xStep = niceStep(xMax || 1, 10);
  const xTop = Math.max(xStep, Math.ceil(xMax / xStep) * xStep);
  const plotW = chart.width - left - right;
  const panelH = (chart.height - bottomAxis - panelGap * (chart.panels.length - 1)) / chart.panels.length;
  const xPix = (x: number) => left + (x / xTop) * plotW;

  chart.panels.forEach((panel, k) => {
    const top = k * (panelH + panelGap) + titleH;
    const plotH = panelH - titleH - 20;
    const bottom = top + plotH;
    let yMax = 0;
    for (const s of panel.series) for (const [, y] of s.points) if (Number.isFinite(y) && y > yMax) yMax = y;
    const yStep = niceStep(yMax || 1, 5);
    const yTop = Math.max(yStep, Math.ceil((yMax * 1.05) / yStep) * yStep);
    const yPix = (y: number) => bottom - (y / yTop) * plotH;

    // Title, then the legend after it in each series' colour.
    cv.text(left, top - titleH + 6, panel.title, INK);
    let lx = left + textWidth(panel.title) + 30;
    for (const s of panel.series) {
      cv.line(lx, top - titleH + 13, lx + 24, top - titleH + 13, s.color, 3, s.dashed ? 4 : 0);
      cv.text(lx + 30, top - titleH + 6, s.label, s.color);
      lx += 30 + textWidth(s.label) + 24;
    }

    for (let v = 0; v <= yTop + 1e-9; v += yStep) {
      const y = yPix(v);
      cv.line(left, y, left + plotW, y, GRID);
      cv.line(left - 5, y, left, y, AXIS);
      const label = fmtTick(v, yStep);
      cv.text(left - 9 - textWidth(label), y - CHAR_H / 2, label, INK);
    }
    for (let v = 0; v <= xTop + 1e-9; v += xStep) {
      const x = xPix(v);
      cv.line(x, top, x, bottom, GRID);
      cv.line(x, bottom, x, bottom + 5, AXIS);
      if (k === chart.panels.length - 1) {
        const label = fmtTick(v, xStep);
        cv.text(x - textWidth(label) / 2, bottom + 9, label, INK);
      }
    }
    cv.line(left, top, left, bottom, AXIS);
    cv.line(left, bottom, left + plotW, bottom, AXIS);

    for (const s of panel.series) {
      let prev: readonly [number, number] | null = null;
      for (const pt of s.points) {
        if (!Number.isFinite(pt[1])) {
          prev = null;
          continue;
        }
        if (prev) cv.line(xPix(prev[0]), yPix(prev[1]), xPix(pt[0]), yPix(pt[1]), s.color, 2, s.dashed ? 6 : 0);
        else cv.rect(xPix(pt[0]) - 1, yPix(pt[1]) - 1, 2, 2, s.color);
        prev = pt;
      }
    }
  });
  cv.text(left + plotW / 2 - textWidth(chart.xLabel) / 2, chart.height - CHAR_H - 6, chart.xLabel, INK);
  return cv.png;
}

export function writeChart(file: string, chart: Chart) {
  writeFileSync(file, PNG.sync.write(renderChart(chart)));
}
