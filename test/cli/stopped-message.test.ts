import { stoppedMessage } from '../../src/cli/commands/launch';

describe('what a stopped launch says is left running', () => {
  test('its own eval set: everything completed is kept, and a launch resumes it', () => {
    expect(stoppedMessage({ evalSet: 'e', reattached: false })).toBe(
      'stopped; the eval set keeps everything completed so far: run `steward launch` again to resume',
    );
  });

  test('re-attached to a detached fleet: that fleet runs on, by pid, and `kill` stops it', () => {
    const said = stoppedMessage({
      evalSet: 'e',
      reattached: true,
      detached: { pid: 4242, log: '/home/u/.steward/workers-e.log' },
    });
    expect(said).toContain('eval set e keeps running');
    expect(said).toContain('(pid 4242, log /home/u/.steward/workers-e.log)');
    expect(said).toContain('`steward status e`');
    expect(said).toContain('`kill 4242`');
  });

  test('re-attached with no detached fleet here: other workers may still serve it', () => {
    const said = stoppedMessage({ evalSet: 'e', reattached: true });
    expect(said).toContain('eval set e stays running in Temporal');
    expect(said).toContain(
      'any other `steward launch` or `steward workers` serving it keeps going',
    );
    expect(said).toContain('`steward status e` shows whether workers still answer');
  });

  test('stopped while a cancellation it asked for runs: the next workers finish it', () => {
    const said = stoppedMessage({ evalSet: 'e', reattached: false, cancelling: true });
    expect(said).toContain('the cancellation of eval set e stays requested in Temporal');
    expect(said).toContain('the workers of the next `steward launch`');
    expect(said).not.toContain('resume');
  });
});
