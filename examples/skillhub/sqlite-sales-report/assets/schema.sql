CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT);
CREATE TABLE orders (
  order_id INTEGER PRIMARY KEY, customer_id INTEGER, region TEXT,
  ordered_at TEXT NOT NULL, status TEXT CHECK (status IN ('paid','cancelled','refunded'))
);
CREATE TABLE order_lines (order_id INTEGER REFERENCES orders, product_id INTEGER REFERENCES products,
  qty INTEGER NOT NULL, unit_price_cents INTEGER NOT NULL);
CREATE TABLE refunds (order_id INTEGER REFERENCES orders, amount_cents INTEGER NOT NULL, refunded_at TEXT);
