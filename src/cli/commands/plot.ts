/**
 * `steward plot [name] -o file.svg|png`: the dashboard's charts of one eval set as a file, for
 * reports. Running or finished, as the dashboard.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { dashboardSpec } from '../../dashboard/charts';
import { renderSvg, svgToPng } from '../../dashboard/render';
import { readDashboard } from '../../dashboard/source';
import { ExitCode, StewardError } from '../../errors';
import { connectClient, resolveTemporal } from '../../temporal/connection';
import { evalSetName } from './dashboard';

export async function plotCommand(
  name: string | undefined,
  opts: { output: string },
): Promise<number> {
  const format = path.extname(opts.output).toLowerCase();
  if (format !== '.svg' && format !== '.png')
    throw new StewardError(`-o ${opts.output}: the file must end in .svg or .png`);
  const client = await connectClient(
    await resolveTemporal(process.env, { onProgress: (m) => console.error(m) }),
  );
  try {
    const target = await evalSetName(client, name);
    const data = await readDashboard(client, target);
    if (data.state === 'missing')
      throw new StewardError(`no eval set named "${target}"`, ExitCode.usage);
    const svg = await renderSvg(dashboardSpec(data));
    await fs
      .writeFile(opts.output, format === '.svg' ? svg : svgToPng(svg))
      .catch((err: unknown) => {
        throw new StewardError(
          `cannot write ${opts.output}: ${(err as Error).message}`,
          ExitCode.environment,
        );
      });
    process.stdout.write(
      `${opts.output}: ${data.tasks.length} tasks, ${data.tends.length} tends of ${target}\n`,
    );
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
