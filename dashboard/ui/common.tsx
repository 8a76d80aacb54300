import type { Banner as BannerData } from '../../lib/dashboard-server/api-types.ts';
import { clock } from './format.ts';

/** Eureka's self-preservation banner, for fail static. */
export function Banner({ banner }: { banner: BannerData }) {
  return (
    <div class={`banner banner-${banner.level}`} role="alert">
      <strong>{banner.title}.</strong> {banner.detail}
    </div>
  );
}

export function Problem({ text }: { text: string }) {
  return (
    <p class="problem" role="status">
      {text}
    </p>
  );
}

/**
 * When the page fetched what it shows, and when what it shows was read from the registry. When
 * the last read failed (`problem`), the page is not live: it says so, and what it still shows
 * is what was read before, marked with that time.
 */
export function Freshness({
  fetchedAt,
  readAt,
  what = 'entries',
  problem,
}: {
  fetchedAt: number | undefined;
  readAt: number | null;
  what?: string;
  problem?: string | undefined;
}) {
  if (problem !== undefined) {
    return (
      <p class="freshness not-live">
        Not live · showing what was read {clock(readAt ?? fetchedAt)}
      </p>
    );
  }
  return (
    <p class="freshness">
      Live · updated {clock(fetchedAt)}
      {readAt !== null && (
        <>
          {' '}
          · {what} read {clock(readAt)}
        </>
      )}
    </p>
  );
}

/** Column headers; `num` ones are right-aligned, as numbers read best. */
export function HeaderRow({ columns }: { columns: readonly (string | [string, 'num'])[] }) {
  return (
    <tr>
      {columns.map((column) =>
        typeof column === 'string' ? (
          <th scope="col" key={column}>
            {column}
          </th>
        ) : (
          <th scope="col" class="num" key={column[0]}>
            {column[0]}
          </th>
        ),
      )}
    </tr>
  );
}
