/** Reading a progress line back into its fields, to check that none was cut short. */

/** What each field of a progress line may read, whole; anything else is a field cut short. */
export const PROGRESS_FIELD =
  /^(\d+\/\d+|ETA \d+[smhd]\S*|waiting|finished|held(: .+)?|[\d.]+( samples)?\/min|in flight \d+(\/\d+)?|setpoint \d+|errors \d+|429 (episodes|ep) \d+|elapsed \d+[smhd]\S*)$/;

/** A line's fields after the name (and bar), split at their separators and blank columns. */
export function progressFields(line: string): string[] {
  return line
    .replace(/^\S+\s+(\[[█░]+\]\s+)?/, '')
    .split(/\s*\| |\s{3,}/)
    .map((f) => f.trim())
    .filter(Boolean);
}
