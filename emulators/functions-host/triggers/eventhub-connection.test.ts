/** How the Event Hubs trigger finds its hub and connection, as the extension's EventHubClientFactory does. */
import { describe, expect, it } from 'vitest';
import { eventHubConnection } from '../connections.ts';

const KEY = 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=a2V5';
const trigger = {
  type: 'eventHubTrigger',
  name: 'events',
  direction: 'in' as const,
  connection: 'Hub',
  eventHubName: 'configured',
};

describe('Event Hubs trigger connection', () => {
  it("lets a connection string's EntityPath win over eventHubName", () => {
    expect(eventHubConnection({ Hub: `${KEY};EntityPath=fromstring` }, trigger)).toEqual({
      connection: `${KEY};EntityPath=fromstring`,
      hub: 'fromstring',
    });
    expect(eventHubConnection({ AzureWebJobsHub: KEY }, trigger)).toEqual({
      connection: KEY,
      hub: 'configured',
    });
  });

  it('takes <name>__fullyQualifiedNamespace for an identity', () => {
    expect(
      eventHubConnection({ Hub__fullyQualifiedNamespace: 'ns.servicebus.windows.net' }, trigger),
    ).toEqual({
      namespace: 'ns.servicebus.windows.net',
      hub: 'configured',
    });
  });

  it("says what is missing in the extension's words", () => {
    expect(() => eventHubConnection({}, trigger)).toThrow(
      "EventHub account connection string with name 'Hub' does not exist in the settings. Make sure that it is a defined App Setting.",
    );
    expect(() => eventHubConnection({ Hub__clientId: 'id' }, trigger)).toThrow(
      "Connection should have an 'fullyQualifiedNamespace' property or be a string representing a connection string.",
    );
  });

  it("without a connection name, takes no setting (not AzureWebJobsStorage): the extension's words", () => {
    const settings = { AzureWebJobsStorage: KEY };
    expect(() => eventHubConnection(settings, { ...trigger, connection: '' })).toThrow(
      'No event hub receiver named configured',
    );
    const output = { type: 'eventHub', direction: 'out' as const, eventHubName: 'configured' };
    expect(() => eventHubConnection(settings, output)).toThrow('No event hub sender named configured');
  });
});
