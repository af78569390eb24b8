// A sparkline: a small inline SVG polyline of a daily series (no axes). The numbers are in
// its aria-label (and title, for hover), since the line alone says nothing to a screen reader.

export function Spark({ values, label, width = 120, height = 28 }: { values: number[]; label: string; width?: number; height?: number }) {
  const max = Math.max(1, ...values);
  const n = values.length;
  const x = (i: number) => (n <= 1 ? width / 2 : (i / (n - 1)) * (width - 2) + 1);
  const y = (v: number) => height - 2 - (v / max) * (height - 4);
  const points = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  const text = `${label}: ${values.join(", ")}`;
  return (
    <svg
      class="spark"
      viewBox={`0 0 ${width} ${height}`}
      width={width}
      height={height}
      role="img"
      aria-label={text}
      data-values={values.join(",")}
    >
      <title>{text}</title>
      {n === 1 ? (
        <circle cx={x(0)} cy={y(values[0]!)} r="2" />
      ) : (
        <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" stroke-linejoin="round" />
      )}
    </svg>
  );
}
