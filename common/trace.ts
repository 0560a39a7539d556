// Recent trace spans, kept in a small ring buffer per component and shown by the admin interface
// (/zpages/tracez). Cheap enough to leave on: one object per finished span; its start time is formatted
// only when the spans are read, not on the request path.

export interface Span {
  name: string;
  start: string;
  durationMs: number;
  attributes?: Record<string, string | number | boolean>;
  error?: string;
}

/** A finished span as kept: its start in epoch milliseconds. */
interface RecordedSpan extends Omit<Span, 'start'> {
  startMs: number;
}

export class SpanRecorder {
  private readonly spans: RecordedSpan[] = [];
  private next = 0;

  constructor(private readonly capacity = 200) {}

  /** Starts a span; call the returned function to finish it. */
  start(name: string, attributes?: Span['attributes']): (error?: unknown) => void {
    const t0 = performance.now();
    const startMs = Date.now();
    return (error?: unknown) => {
      const span: RecordedSpan = { name, startMs, durationMs: Math.round((performance.now() - t0) * 1000) / 1000 };
      if (attributes) span.attributes = attributes;
      if (error !== undefined) span.error = error instanceof Error ? error.message : String(error);
      if (this.spans.length < this.capacity) this.spans.push(span);
      else this.spans[this.next] = span;
      this.next = (this.next + 1) % this.capacity;
    };
  }

  /** Newest first. */
  recent(): Span[] {
    const ordered =
      this.spans.length < this.capacity ? [...this.spans] : [...this.spans.slice(this.next), ...this.spans.slice(0, this.next)];
    return ordered.reverse().map(({ name, startMs, ...rest }) => ({ name, start: new Date(startMs).toISOString(), ...rest }));
  }
}
