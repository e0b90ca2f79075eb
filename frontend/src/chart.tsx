import { useEffect, useRef } from "preact/hooks";
import * as echarts from "echarts/core";
import { BarChart, LineChart, PieChart, ScatterChart } from "echarts/charts";
import { DataZoomComponent, GridComponent, LegendComponent, MarkLineComponent, MarkPointComponent, TooltipComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

echarts.use([BarChart, PieChart, LineChart, ScatterChart, GridComponent, LegendComponent, TooltipComponent,
  DataZoomComponent, MarkLineComponent, MarkPointComponent, CanvasRenderer]);

export function Chart({ option, height = 280, id }: { option: any; height?: number; id?: string }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current) return;
    const chart = echarts.init(el.current, undefined, { renderer: "canvas" });
    chart.setOption({ animation: false, ...option });
    const onResize = () => chart.resize();
    window.addEventListener("resize", onResize);
    return () => { window.removeEventListener("resize", onResize); chart.dispose(); };
  }, [option]);
  return <div class="chart" id={id} ref={el} style={{ height: `${height}px` }} />;
}
