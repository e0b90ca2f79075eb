import { useEffect, useRef } from "preact/hooks";
import * as echarts from "echarts/core";
import { BarChart, GraphChart, HeatmapChart, LineChart, PieChart, ScatterChart } from "echarts/charts";
import { DataZoomComponent, GridComponent, LegendComponent, MarkAreaComponent, MarkLineComponent, MarkPointComponent, TooltipComponent, VisualMapComponent } from "echarts/components";
import { LabelLayout } from "echarts/features";
import { CanvasRenderer } from "echarts/renderers";

echarts.use([BarChart, GraphChart, HeatmapChart, PieChart, LineChart, ScatterChart, GridComponent, LegendComponent, TooltipComponent,
  DataZoomComponent, VisualMapComponent, MarkAreaComponent, MarkLineComponent, MarkPointComponent, LabelLayout, CanvasRenderer]);

/** `onReady` gets the instance after the first setOption (events, roam, dispatchAction). */
export function Chart({ option, height = 280, id, onReady }: {
  option: any; height?: number; id?: string; onReady?: (chart: echarts.ECharts) => void;
}) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current) return;
    const chart = echarts.init(el.current, undefined, { renderer: "canvas" });
    chart.setOption({ animation: false, ...option });
    onReady?.(chart);
    const onResize = () => chart.resize();
    window.addEventListener("resize", onResize);
    return () => { window.removeEventListener("resize", onResize); chart.dispose(); };
  }, [option]);
  return <div class="chart" id={id} ref={el} style={{ height: `${height}px` }} />;
}
