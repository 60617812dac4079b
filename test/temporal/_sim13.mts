import { startSim } from './helpers.mts';
const s = await startSim(31); console.log(s.url); setInterval(() => {}, 1000);
