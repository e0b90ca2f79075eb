import type { ComponentChildren } from "preact";

// Where a long identifier (a kernel's C++ name, a layer, a file path) may wrap: after `::`,
// `<`, `,`, `_`, `(`, `/`, `.` and spaces, never inside a word (CSS `overflow-wrap: anywhere`
// broke "at::native::vectorized_elementwise_kernel" mid-word). <wbr> marks each point.
const BREAK = /(::|[<,_(/.]|\s+)/;

/** `text` with a <wbr> after each natural break point (plain text, escaped by Preact). */
export function breakable(text: unknown): ComponentChildren {
  const s = String(text ?? "");
  if (s.length < 24) return s;
  const out: ComponentChildren[] = [];
  for (const [i, part] of s.split(BREAK).entries()) {
    if (!part) continue;
    out.push(part);
    if (i % 2 === 1) out.push(<wbr key={i} />);
  }
  return out;
}
