/** The attack report's style sheet (inline in the one HTML file): light and dark, desktop and phone. */
export const CSS = `
:root{--bg:#f6f7f9;--card:#fff;--fg:#1b1f24;--muted:#5f6b7a;--line:#e3e7ec;--grid:#eceff3;--attack:#d9363e;--clean:#2f7de1;--reported:#e8890c;--ok:#16794c;--okbg:#e3f5ec;--warn:#8a5a00;--warnbg:#fff3d6;--bad:#b42318;--badbg:#fde8e7;--chip:#eef1f5}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--card:#181c22;--fg:#e6e9ee;--muted:#9aa5b4;--line:#2a3038;--grid:#232931;--attack:#ff6b6b;--clean:#5aa2ff;--reported:#ffb347;--ok:#5fd39a;--okbg:#12301f;--warn:#f5c46b;--warnbg:#3a2e12;--bad:#ff8a80;--badbg:#3d1715;--chip:#222831}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:28px 24px 40px}
header{display:flex;justify-content:space-between;align-items:flex-start;gap:16px;margin-bottom:20px}
h1{font-size:26px;line-height:1.2;margin:0 0 4px}
h2{font-size:16px;margin:0 0 12px}
h2 small{color:var(--muted);font-weight:500;margin-left:6px}
.sub{color:var(--muted);margin:0}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:18px 20px;margin-bottom:16px}
.kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(190px,1fr));gap:12px;margin-bottom:16px}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:14px 16px}
.kpi .label{color:var(--muted);font-size:13px;text-transform:uppercase;letter-spacing:.04em}
.kpi .value{font-size:28px;font-weight:650;font-variant-numeric:tabular-nums}
.kpi .value.small{font-size:20px;padding:5px 0}
.kpi .hint{color:var(--muted);font-size:13px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.grid2 .card{margin-bottom:0}
.grid2{margin-bottom:16px}
.chart{width:100%;height:auto;display:block}
.chart .grid{stroke:var(--grid);stroke-width:1}
.chart .axis{stroke:var(--muted);stroke-width:1}
.chart .tick{fill:var(--muted);font-size:12px;font-variant-numeric:tabular-nums}
.chart .line{fill:none;stroke-width:2.2;stroke-linejoin:round}
.chart .area{opacity:.16}
.chart .marker line{stroke:var(--muted);stroke-width:1.2;stroke-dasharray:4 4}
.chart .marker text{fill:var(--fg);font-size:12.5px;font-weight:600}
.chart .marker.start line{stroke:var(--attack)}.chart .marker.start text{fill:var(--attack)}
.chart .marker.mitigated line{stroke:var(--reported)}.chart .marker.mitigated text{fill:var(--reported)}
.chart .marker.reverted line{stroke:var(--ok)}.chart .marker.reverted text{fill:var(--ok)}
.chart.narrow{display:none}
.legend{display:flex;flex-wrap:wrap;gap:8px 18px;margin-top:8px;color:var(--muted);font-size:13px}
.key i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.key i.dash{background:none;border-left:2px dashed var(--muted);border-radius:0;width:2px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px}
th{text-align:left;color:var(--muted);font-weight:600;font-size:12.5px;text-transform:uppercase;letter-spacing:.03em;border-bottom:1px solid var(--line);padding:6px 10px 8px}
td{border-bottom:1px solid var(--line);padding:8px 10px;vertical-align:top}
tr:last-child td{border-bottom:none}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.changes td:first-child{min-width:180px}
.note{color:var(--muted);font-size:12.5px;margin-top:2px}
.badge{display:inline-block;padding:2px 9px;border-radius:999px;font-size:12.5px;font-weight:600;white-space:nowrap;background:var(--chip);color:var(--muted)}
.badge.big{font-size:15px;padding:5px 14px}
.badge.ok{background:var(--okbg);color:var(--ok)}.badge.warn{background:var(--warnbg);color:var(--warn)}.badge.bad{background:var(--badbg);color:var(--bad)}
.chips{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:8px}
.chips li{background:var(--chip);border-radius:8px;padding:4px 10px}
.empty{color:var(--muted);margin:0}
.note{color:var(--muted);font-size:13px;margin:8px 0 0}
.error{background:var(--badbg);color:var(--bad);border-radius:10px;padding:10px 14px}
footer{color:var(--muted);font-size:12.5px;text-align:center;margin-top:24px}
@media (max-width:700px){main{padding:16px 12px 28px}h1{font-size:21px}header{flex-direction:column;gap:8px}.grid2{grid-template-columns:1fr}.card{padding:14px}
.kpis{grid-template-columns:1fr 1fr;gap:10px}.kpi{padding:12px}.kpi .value{font-size:22px}.kpi .label{font-size:11.5px}
.chart.wide{display:none}.chart.narrow{display:block}.chart .tick{font-size:14px}.chart .marker text{font-size:14px}
table,tbody,tr,td{display:block;width:100%}thead{display:none}tr{border-bottom:1px solid var(--line);padding:8px 0}tr:last-child{border-bottom:none}
td{border:none;padding:3px 0}td::before{content:attr(data-label);display:block;color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.03em}
.changes td:first-child{font-weight:600}}
`;
