import type { Service, ServiceName } from '../service';
import { kafka } from './kafka';
import { postgres } from './postgres';
import { s3, s3Identities, stackS3Client } from './s3';
import { temporal } from './temporal';

export const SERVICES: Record<ServiceName, Service> = { temporal, kafka, s3, postgres };
export { s3Identities, stackS3Client };
