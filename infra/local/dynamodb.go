package local

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDB returns a DynamoDB client for a local stand-in at endpoint
// (dynalite), with the stand-ins' region and fake static credentials;
// opts adjust it further (a test transport, say).
func DynamoDB(endpoint string, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(FakeAccessKeyID, FakeSecretAccessKey, ""),
	}, opts...)
}
