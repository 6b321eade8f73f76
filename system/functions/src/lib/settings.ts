/** App settings, read from the environment as in Azure. An empty value counts as absent (local.settings.json leaves them empty). */
export function setting(name: string): string | undefined {
  const value = process.env[name];
  return value ? value : undefined;
}

export class MissingSettingError extends Error {
  constructor(name: string) {
    super(`the app setting ${name} is missing or empty`);
  }
}

export function requiredSetting(name: string): string {
  const value = setting(name);
  if (!value) throw new MissingSettingError(name);
  return value;
}
