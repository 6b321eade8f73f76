/**
 * Where the stack's resources sit in Azure Resource Manager's terms: an all-zero subscription id and a
 * `taskstack` resource group, so nobody mistakes an id made from them for a real one.
 */
export const SUBSCRIPTION_ID = '00000000-0000-0000-0000-000000000000';
export const RESOURCE_GROUP = 'taskstack';
