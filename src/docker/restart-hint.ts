/**
 * Which kind of Docker install this is, and how its user restarts it. Steward never restarts the
 * daemon itself (a restart stops every container on the machine); it only says how.
 *
 * Pure: the shell gathers the facts ({@link DockerHostFacts}) and these functions decide.
 */

/** The facts the decision needs, gathered by the caller. */
export interface DockerHostFacts {
  /** `process.platform`. */
  platform: NodeJS.Platform;
  /** `os.release()`: WSL kernels say `microsoft` in it. */
  osRelease: string;
  env: Record<string, string | undefined>;
  /** Whether systemd runs this machine (`/run/systemd/system` exists). */
  hasSystemd: boolean;
  /** From `docker info`: `OperatingSystem` and `SecurityOptions`. */
  info: { OperatingSystem?: string; SecurityOptions?: string[] };
}

/** The kinds of install whose restart differs. */
export type DockerHostKind =
  | 'docker-desktop-mac'
  | 'docker-desktop-windows'
  | 'docker-desktop-linux'
  | 'rootless'
  | 'systemd'
  | 'sysvinit'
  | 'windows-service'
  | 'unknown';

/** How to restart the daemon: a command when there is one, and a sentence either way. */
export interface RestartHint {
  kind: DockerHostKind;
  /** A shell command that restarts the daemon, when the platform has one. */
  command?: string;
  /** What to tell the user. */
  text: string;
}

/** Decides the kind of install from the facts. */
export function detectDockerHost(facts: DockerHostFacts): DockerHostKind {
  const desktop = /docker desktop/i.test(facts.info.OperatingSystem ?? '');
  const wsl = !!facts.env.WSL_DISTRO_NAME || /microsoft/i.test(facts.osRelease);
  if (desktop || facts.platform === 'darwin') {
    if (facts.platform === 'darwin') return 'docker-desktop-mac';
    // Docker Desktop's WSL integration serves a Linux shell from a Windows app.
    if (facts.platform === 'win32' || wsl) return 'docker-desktop-windows';
    return 'docker-desktop-linux';
  }
  if (facts.platform === 'win32') return 'windows-service';
  if (facts.info.SecurityOptions?.some((option) => /(^|,)name=rootless(,|$)/.test(option))) {
    return 'rootless';
  }
  if (facts.platform !== 'linux') return 'unknown';
  return facts.hasSystemd ? 'systemd' : 'sysvinit';
}

/** The restart command and advice for a kind of install. */
export function restartHint(kind: DockerHostKind): RestartHint {
  const caution = 'This stops every running container on the machine, so choose the moment.';
  switch (kind) {
    case 'docker-desktop-mac':
      return {
        kind,
        command: `osascript -e 'quit app "Docker"' && open -a Docker`,
        text: `Restart Docker Desktop (whale menu > Restart), or run the command below. ${caution}`,
      };
    case 'docker-desktop-windows':
      return {
        kind,
        text: `Restart Docker Desktop from its tray icon menu (Restart). ${caution}`,
      };
    case 'docker-desktop-linux':
      return {
        kind,
        command: 'systemctl --user restart docker-desktop',
        text: `Restart Docker Desktop (its menu > Restart), or run the command below. ${caution}`,
      };
    case 'rootless':
      return {
        kind,
        command: 'systemctl --user restart docker',
        text: `Restart rootless Docker. ${caution}`,
      };
    case 'systemd':
      return { kind, command: 'sudo systemctl restart docker', text: `Restart Docker. ${caution}` };
    case 'sysvinit':
      return { kind, command: 'sudo service docker restart', text: `Restart Docker. ${caution}` };
    case 'windows-service':
      return {
        kind,
        command: 'Restart-Service docker',
        text: `Restart the Docker service from an administrator PowerShell. ${caution}`,
      };
    case 'unknown':
      return { kind, text: `Restart the Docker daemon. ${caution}` };
  }
}
