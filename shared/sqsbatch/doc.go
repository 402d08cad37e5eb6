// Package sqsbatch handles one SQS batch the way toolgate's queue
// consumers do (webhook-delivery, inbound-start): records at most a
// bounded number at once, and the answer naming each record that failed,
// so that SQS delivers again only those (AWS Lambda Developer Guide,
// "Handling errors for an SQS event source in Lambda": partial batch
// responses, ReportBatchItemFailures).
package sqsbatch
