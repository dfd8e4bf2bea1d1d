import type { Service, ServiceName } from '../service';
import { kafka } from './kafka';
import { postgres } from './postgres';
import { s3, stackS3Client } from './s3';
import { temporal } from './temporal';

export const SERVICES: Record<ServiceName, Service> = { temporal, kafka, s3, postgres };
export { stackS3Client };
