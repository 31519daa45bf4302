INSERT INTO products VALUES (1,'Desk lamp','home'),(2,'Notebook','office'),(3,'Kettle','home');
INSERT INTO orders VALUES
 (100,1,'EMEA','2024-01-05T10:00:00Z','paid'),
 (101,2,'EMEA','2024-01-20T12:30:00Z','refunded'),
 (102,3,'NA','2024-01-22T08:00:00Z','paid'),
 (103,4,'NA','2024-01-25T09:00:00Z','cancelled'),
 (104,1,'EMEA','2024-02-02T11:00:00Z','paid'),
 (105,5,NULL,'2024-02-14T16:45:00Z','paid');
INSERT INTO order_lines VALUES
 (100,1,2,5000),(101,3,1,8000),(102,2,4,1000),(103,1,1,5000),(104,2,3,3000),(105,2,1,2500);
INSERT INTO refunds VALUES (101,3000,'2024-02-03T10:00:00Z');
