import type { PageProps } from "../pageProps";
import { FindingCard, Together } from "./FindingCard";

export function Findings({ report, config }: PageProps) {
  return (
    <div class="page" id="page-findings">
      <h2>Findings ({report.findings.length})</h2>
      <Together report={report} />
      {report.findings.length === 0 ? <p>No findings.</p> :
        report.findings.map((f: any, i: number) => <FindingCard key={f.id} f={f} config={config} index={i + 1} />)}
    </div>
  );
}
