import type { Service, ServiceName } from '../service';
import { icebergRest } from './iceberg-rest';
import { kafka } from './kafka';
import { kafkaConnect } from './kafka-connect';
import { postgres, postgresCdc } from './postgres';
import { s3, s3Identities, stackS3Client } from './s3';
import { schemaRegistry } from './schema-registry';
import { temporal } from './temporal';
import { temporalTls } from './temporal-tls';

export const SERVICES: Record<ServiceName, Service> = {
  temporal,
  kafka,
  s3,
  postgres,
  'iceberg-rest': icebergRest,
  'temporal-tls': temporalTls,
  'schema-registry': schemaRegistry,
  'postgres-cdc': postgresCdc,
  'kafka-connect': kafkaConnect,
};
export { s3Identities, stackS3Client };
