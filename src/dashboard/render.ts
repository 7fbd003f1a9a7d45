/**
 * The dashboard's charts as a file, for reports: SVG from Vega's headless renderer (no browser,
 * no canvas), PNG rasterised from that SVG by resvg (a prebuilt Rust binary: nothing to compile).
 */
import { Resvg } from '@resvg/resvg-js';
import type { TopLevelSpec } from 'vega-lite' with { 'resolution-mode': 'import' };

/** Renders a Vega-Lite spec as an SVG document. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  // Both packages are ES modules only; this file is CommonJS.
  const vega = await import('vega');
  const vegaLite = await import('vega-lite');
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Rasterises an SVG document to PNG at twice its size, on white, with the system's fonts. */
export function svgToPng(svg: string): Buffer {
  return new Resvg(svg, { fitTo: { mode: 'zoom', value: 2 }, background: 'white' })
    .render()
    .asPng();
}
