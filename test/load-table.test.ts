/**
 * The load run's table reports memory against issue 14's goals: the run's total and the largest
 * worker process, each met or missed by how much.
 */
import { MEMORY_GOALS_KB, loadTable, type LoadRun } from '../scripts/load/measure';

const MIB = 1024;

function run(totalMib: number, workerMib: number, totalPssMib = totalMib): LoadRun {
  return {
    shape: { tasks: 20, samplesPerTask: 1_000, maxSamples: 100 },
    cli: { code: 0, stdout: '', stderr: '' },
    wallMs: 100_000,
    records: 20_000,
    memory: {
      peakTotalKb: totalMib * MIB,
      peakTotalPssKb: totalPssMib * MIB,
      peakByKindKb: { launch: 120 * MIB, worker: workerMib * MIB, temporal: 900 * MIB },
      processesByKind: { launch: 1, worker: 20, temporal: 1 },
      cpuSecondsByKind: {},
      samplings: 10,
    },
    histories: [
      {
        run: { workflowId: 'steward-load', runId: 'r', type: 'evalSet', status: 'COMPLETED' },
        events: 100,
        bytes: 2048,
      },
    ],
  };
}

/** The table's row that starts with `label`, its columns squeezed to single spaces. */
function row(table: string, label: string): string {
  const line = table.split('\n').find((l) => l.startsWith(label));
  if (line === undefined) throw new Error(`no row "${label}" in:\n${table}`);
  return line.replace(/\s+/g, ' ');
}

describe('the load table', () => {
  test('the goals are those of issue 14', () => {
    expect(MEMORY_GOALS_KB).toEqual({ total: 2560 * MIB, worker: 150 * MIB });
  });

  test('memory above the goals reads as missed, by how much', () => {
    const table = loadTable(run(5_900, 300, 4_608));
    expect(row(table, 'peak RSS, all processes')).toContain(
      '5900 MiB (goal 2560 MiB: missed by 2.30x)',
    );
    expect(row(table, 'peak PSS, all processes')).toContain(
      '4608 MiB (goal 2560 MiB: missed by 1.80x)',
    );
    expect(row(table, 'max RSS, one worker process (20 seen)')).toContain(
      '300 MiB (goal 150 MiB: missed by 2.00x)',
    );
    // Only the worker has a goal of its own.
    expect(row(table, 'max RSS, one Temporal dev server (1 seen)')).toMatch(/ 900 MiB$/);
  });

  test('memory at or below the goals reads as met', () => {
    const table = loadTable(run(3_000, 140, 2_560));
    expect(row(table, 'peak RSS, all processes')).toContain('3000 MiB (goal 2560 MiB: missed');
    expect(row(table, 'peak PSS, all processes')).toContain('2560 MiB (goal 2560 MiB: met)');
    expect(row(table, 'max RSS, one worker process')).toContain('140 MiB (goal 150 MiB: met)');
  });
});
