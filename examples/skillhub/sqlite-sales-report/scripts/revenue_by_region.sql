-- Net revenue per month and region (refunds attributed to the order's month).
WITH gross AS (
  SELECT o.order_id, strftime('%Y-%m', o.ordered_at) AS month,
         COALESCE(o.region, 'UNASSIGNED') AS region,
         SUM(l.qty * l.unit_price_cents) AS cents
  FROM orders o JOIN order_lines l USING (order_id)
  WHERE o.status IN ('paid', 'refunded')
  GROUP BY o.order_id
), refunded AS (
  SELECT order_id, SUM(amount_cents) AS cents FROM refunds GROUP BY order_id
)
SELECT g.month, g.region, SUM(g.cents - COALESCE(r.cents, 0)) AS net_cents
FROM gross g LEFT JOIN refunded r USING (order_id)
GROUP BY g.month, g.region
ORDER BY g.month, g.region;
