/**
 * Sums and ranks what `REGISTRAR_TEST_CPU` recorded (test/cpu-per-file.ts): the CPU of each
 * pass and folder, and the files that cost the most. `node test/cpu-report.ts <file> [top]`.
 */
import { readFileSync } from 'node:fs';

interface FileCpu {
  file: string;
  backend: string;
  cpuS: number;
  wallS: number;
}

const [input, topArg] = process.argv.slice(2);
if (!input) {
  console.error('usage: node test/cpu-report.ts <REGISTRAR_TEST_CPU file> [how many files]');
  process.exit(2);
}
const lines = readFileSync(input, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as FileCpu);
const sums = new Map<string, { cpu: number; wall: number; files: number }>();
for (const line of lines) {
  const folder = line.file.split('/').slice(0, 2).join('/');
  for (const key of [`${line.backend} pass`, `${line.backend} ${folder}`]) {
    const sum = sums.get(key) ?? { cpu: 0, wall: 0, files: 0 };
    sum.cpu += line.cpuS;
    sum.wall += line.wallS;
    sum.files += 1;
    sums.set(key, sum);
  }
}
const seconds = (s: number) => `${s.toFixed(0)} s`.padStart(7);
console.log(`${lines.length} files, ${seconds(lines.reduce((t, l) => t + l.cpuS, 0))} of CPU`);
for (const [key, sum] of [...sums].sort(([a], [b]) => (a < b ? -1 : 1))) {
  console.log(`${seconds(sum.cpu)} CPU ${seconds(sum.wall)} wall  ${sum.files} files  ${key}`);
}
console.log('the most CPU:');
for (const line of [...lines].sort((a, b) => b.cpuS - a.cpuS).slice(0, Number(topArg ?? 25))) {
  console.log(
    `${seconds(line.cpuS)} CPU ${seconds(line.wallS)} wall  ${line.backend} ${line.file}`,
  );
}
