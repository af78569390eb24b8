// Loading an API answer into a view: the answer, the error to show, and whether it is on
// its way. A newer load replaces an older one still running (its answer is dropped), so a
// quick change of dates or filters never shows a stale answer.

import { useEffect, useState } from "preact/hooks";

export interface Loaded<T> {
  data: T | null;
  error: Error | null;
  loading: boolean;
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> & { reload: () => void } {
  const [state, setState] = useState<Loaded<T>>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ data, error: null, loading: false }),
      (error: Error) => current && setState({ data: null, error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}
