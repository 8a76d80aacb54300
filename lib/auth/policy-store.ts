import type { EpochMillis } from '../domain/model.ts';

/**
 * An IAM-mode allow rule: sessions of `roleArn` may register VMs in `namespace` (and, when
 * `serviceAccount` is set, only into groups running as that service account). Without a
 * rule, an IAM caller is refused: deny by default.
 */
export interface IamPolicy {
  /** `arn:<partition>:iam::<account>:role/<name>`, without a path (see iam-caller.ts). */
  roleArn: string;
  namespace: string;
  serviceAccount?: string;
  /** The networks entries registered by this role here may be in; unset, any. */
  networks?: string[];
  createdAt: EpochMillis;
}

/** What the connect path needs: one rule, by role and namespace. */
export interface PolicyReader {
  getPolicy(roleArn: string, namespace: string): Promise<IamPolicy | undefined>;
}

/** What the operator CLI needs on top. */
export interface PolicyStore extends PolicyReader {
  /** Creates or replaces the rule for (role, namespace). */
  putPolicy(policy: IamPolicy): Promise<void>;
  listPolicies(): Promise<IamPolicy[]>;
  /** False when there was no such rule. */
  deletePolicy(roleArn: string, namespace: string): Promise<boolean>;
}
